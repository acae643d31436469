// The plan's JSON Schema for editors (YAML language servers), generated from the zod schema
// so the two never disagree. Committed as contracts/plan.schema.json; a test keeps it fresh.
import { z } from 'zod';
import { planSchema } from './plan.js';

export function planJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(planSchema, { io: 'input', unrepresentable: 'any' }),
    $id: 'https://probefleet.dev/schemas/plan.schema.json',
    title: 'probefleet experiment plan',
  };
}
