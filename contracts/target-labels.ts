// Target labels (`team: payments`): what a plan declares in `targetLabels` and its targets carry,
// into results, reports and the `probefleet_target_info` series that dashboards join on
// (docs/decisions/030-target-labels.md). Label names are Prometheus label names that none of
// probefleet's own series use; values are short text, and few per label (TARGET_FILE_LIMITS).
import { z } from 'zod';
import { TARGET_FILE_LIMITS } from './limits.js';

/** A Prometheus label name; one starting with `__` is Prometheus's own. */
export const LABEL_NAME_PATTERN = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * Label names probefleet's series carry already (every label of contracts/metric-names.ts
 * LABEL_VALUES, the push groups' keys), and those Prometheus adds or reads (`job`, `instance`,
 * `le`): a target label of one of these names would clash in `probefleet_target_info` or in a
 * `group_left` join. test/unit/target-files.test.ts checks the list holds every label of LABEL_VALUES.
 */
export const RESERVED_LABELS = [
  'job',
  'instance',
  'le',
  'plan',
  'region',
  'target',
  'probe',
  'outcome',
  'mode',
  'loop',
  'code_class',
  'connection',
  'phase',
  'tls_version',
  'handshake',
  'quantile',
  'scheme',
  'finding',
  'severity',
  'protocol',
  'request',
  'message',
  'encoding',
  'layer',
  'group',
  'state',
  'persistence',
  'kind',
  'variant',
  'quantity',
  'threshold',
  'verdict',
  'resolver',
  'record_type',
  'cache',
  'client',
] as const;

/** What is wrong with a label name, or undefined. */
export function labelNameProblem(name: string): string | undefined {
  if (!LABEL_NAME_PATTERN.test(name))
    return `"${name}" is not a Prometheus label name (a letter or "_", then letters, digits or "_")`;
  if (name.startsWith('__')) return `"${name}" starts with "__", which Prometheus keeps for its own labels`;
  if ((RESERVED_LABELS as readonly string[]).includes(name))
    return `"${name}" is a label of probefleet's own series (dashboards/metric-catalogue.json lists them): choose another name`;
  return undefined;
}

/** `targetLabels: [team, service]`: the labels a plan's targets may carry. */
export const targetLabelsSchema = z
  .array(z.string())
  .min(1)
  .max(TARGET_FILE_LIMITS.labelNames)
  .superRefine((names, ctx) => {
    names.forEach((name, i) => {
      const problem = labelNameProblem(name);
      if (problem) ctx.addIssue({ code: 'custom', path: [i], message: problem });
      else if (names.indexOf(name) !== i)
        ctx.addIssue({ code: 'custom', path: [i], message: `lists label "${name}" twice` });
    });
  });

/** What is wrong with a label value, or undefined. An empty value is no label (as in Prometheus). */
export function labelValueProblem(value: unknown): string | undefined {
  if (typeof value !== 'string')
    return `a label value is text, got ${value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'a mapping' : String(value)} (quote it)`;
  if (value.length > TARGET_FILE_LIMITS.labelValueChars)
    return `a label value of ${value.length} characters, over the limit of ${TARGET_FILE_LIMITS.labelValueChars}`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters refused
  if (/[\u0000-\u001f\u007f-\u009f]/.test(value)) return 'a label value holds a control character';
  return undefined;
}

/** A target's labels: names are checked against the plan's `targetLabels` where the plan is known. */
export const targetLabelValuesSchema = z.record(
  z.string(),
  z.string().superRefine((value, ctx) => {
    const problem = labelValueProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
);
export type TargetLabels = Record<string, string>;

/** "label "tema" is not in targetLabels (team, service)" with a guess when one is near. */
export function undeclaredLabelMessage(name: string, declared: readonly string[] | undefined): string {
  if (!declared || declared.length === 0)
    return `label "${name}": the plan declares no targetLabels (add targetLabels: [${name}] to keep it)`;
  return `label "${name}" is not in targetLabels (${declared.join(', ')})`;
}

/** "label "service" has 101 distinct values over the plan's targets, over the limit of 100 ..." */
export function tooManyValuesMessage(name: string): string {
  return `label "${name}" takes more than ${TARGET_FILE_LIMITS.labelValues} distinct values over the plan's targets (the limit, contracts/limits.ts: a label groups targets, it does not name each one)`;
}
