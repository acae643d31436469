// The fields a zod schema allows at a place in a document, for messages about a field it does not
// know ("did you mean ..."). Follows the wrappers the plan's schemas use (optional, default,
// nullable, pipe, lazy), lists, records, and unions: a discriminated union by the discriminator's
// value in the document, any other by the options that have the next field.
import type { z } from 'zod';

interface SchemaDef {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  getter?: () => z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  options?: z.ZodType[];
  discriminator?: string;
}

const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: SchemaDef } })._zod.def;

function unwrapped(schema: z.ZodType): z.ZodType {
  for (let current = schema; ; ) {
    const def = defOf(current);
    const next = def.innerType ?? (def.type === 'pipe' ? def.in : def.type === 'lazy' ? def.getter?.() : undefined);
    if (!next) return current;
    current = next;
  }
}

/** The options of a union that can describe `value`: by the discriminator's value, else all. */
function optionsFor(def: SchemaDef, value: unknown): z.ZodType[] {
  const options = def.options ?? [];
  if (!def.discriminator || typeof value !== 'object' || value === null) return options;
  const wanted = (value as Record<string, unknown>)[def.discriminator];
  const matching = options.filter((option) => {
    const field = defOf(unwrapped(option)).shape?.[def.discriminator!];
    const literal = field && (defOf(unwrapped(field)) as { values?: unknown[] }).values;
    return literal?.includes(wanted);
  });
  return matching.length > 0 ? matching : options;
}

/** The schemas that can describe the value at `path` of `document` (more than one within a union). */
function schemasAt(schema: z.ZodType, path: readonly PropertyKey[], document: unknown): z.ZodType[] {
  let current = [schema];
  let value = document;
  for (const key of path) {
    current = current.flatMap((s) => {
      const def = defOf(unwrapped(s));
      const candidates = def.type === 'union' ? optionsFor(def, value).map((o) => defOf(unwrapped(o))) : [def];
      return candidates.flatMap((d) => {
        const next =
          d.type === 'object'
            ? d.shape?.[String(key)]
            : d.type === 'array'
              ? d.element
              : d.type === 'record'
                ? d.valueType
                : undefined;
        return next ? [next] : [];
      });
    });
    value = (value as Record<PropertyKey, unknown> | undefined)?.[key];
  }
  return current.flatMap((s) => {
    const def = defOf(unwrapped(s));
    return def.type === 'union' ? optionsFor(def, value) : [s];
  });
}

/** The field names the mapping at `path` of `document` may hold; empty where the schema has no mapping of named fields. */
export function fieldNamesAt(schema: z.ZodType, path: readonly PropertyKey[], document: unknown): string[] {
  const names = schemasAt(schema, path, document).flatMap((s) => Object.keys(defOf(unwrapped(s)).shape ?? {}));
  return [...new Set(names)];
}
