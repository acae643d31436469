// What a plan says about the verdicts on its runs: the baseline its comparisons use, thresholds
// (SLOs) on the run's quantities, checked by `run` and by the coordinator and turned into alert
// rules by `probefleet alerts`, and its own values for the alerts' fixed thresholds.
// docs/thresholds.md documents them.
import { z } from 'zod';
import { nameSchema } from './common.js';
import { PROBE_KINDS } from './probes/index.js';
import { QUANTITIES, QUANTITY_IDS, type QuantityId, type QuantitySpec } from './quantities.js';

/** The quantities a threshold may bound: every compared one, and the share of requests that succeeded. */
export const THRESHOLD_QUANTITY_IDS = [...QUANTITY_IDS, 'success_ratio'] as const;
export type ThresholdQuantityId = (typeof THRESHOLD_QUANTITY_IDS)[number];

export const thresholdQuantitySpec = (quantity: ThresholdQuantityId): QuantitySpec =>
  quantity === 'success_ratio'
    ? { label: 'success ratio', unit: 'share', better: 'higher' }
    : QUANTITIES[quantity as QuantityId];

export const thresholdSchema = z
  .strictObject({
    /** Names the threshold in reports, metrics (label `threshold`) and alerts; default the quantity. */
    name: nameSchema.optional(),
    quantity: z.enum(THRESHOLD_QUANTITY_IDS),
    /** Breached when the run's value is above `max` or below `min`, in the quantity's unit (ms, bytes, a share 0..1, per second). */
    max: z.number().min(-1e9).max(1e9).optional(),
    min: z.number().min(-1e9).max(1e9).optional(),
    /** Only from these regions, to these targets, by these probes; default every one. */
    regions: z.array(nameSchema).min(1).max(50).optional(),
    targets: z.array(nameSchema).min(1).max(100).optional(),
    probes: z.array(z.enum(PROBE_KINDS)).min(1).optional(),
  })
  .superRefine((t, ctx) => {
    if (t.max === undefined && t.min === undefined)
      ctx.addIssue({ code: 'custom', path: ['max'], message: 'a threshold needs max or min (or both)' });
    if (t.max !== undefined && t.min !== undefined && t.min > t.max)
      ctx.addIssue({ code: 'custom', path: ['min'], message: `min ${t.min} is above max ${t.max}` });
    if (thresholdQuantitySpec(t.quantity).unit === 'share')
      for (const bound of ['max', 'min'] as const) {
        const value = t[bound];
        if (value !== undefined && (value < 0 || value > 1))
          ctx.addIssue({
            code: 'custom',
            path: [bound],
            message: `${t.quantity} is a share from 0 to 1 (99% is 0.99), got ${value}`,
          });
      }
  });
export type Threshold = z.infer<typeof thresholdSchema>;

/** The name a threshold goes by: its own, or its quantity's. */
export const thresholdName = (t: Threshold) => t.name ?? t.quantity;

export const baselineSettingsSchema = z.strictObject({
  /** Earlier runs of the plan a comparison's baseline holds. */
  runs: z.int().min(1).max(50).default(7),
});

/** The alerts' fixed thresholds; a plan may set its own (`probefleet alerts PLAN`). */
export const ALERT_DEFAULTS = {
  /** p95 of full TLS handshakes in a region's last run. */
  handshakeP95Ms: 500,
  /** Median handshake over the region's own median of the 7 days before the last one... */
  handshakeRegressionRatio: 1.5,
  /** ...and at least this much slower, so that loopback-sized noise never pages anyone. */
  handshakeRegressionMinMs: 20,
  /** No run with results from a region for this long: a nightly run went missing. */
  runMissingHours: 26,
  /** Share of a probe's jobs in a region's last run without a clean result. */
  failureRatio: 0.2,
  /** Days before a certificate's notAfter (the tls probe's CERT_EXPIRES_SOON default). */
  certificateExpiryDays: 21,
} as const;

const positive = z.number().positive().max(1e9);
export const alertSettingsSchema = z.strictObject({
  handshakeP95Ms: positive.optional(),
  handshakeRegressionRatio: z.number().min(1).max(1000).optional(),
  handshakeRegressionMinMs: positive.optional(),
  runMissingHours: positive.optional(),
  failureRatio: z.number().min(0).max(1).optional(),
  certificateExpiryDays: positive.optional(),
});
export type AlertSettings = { [K in keyof typeof ALERT_DEFAULTS]: number };

/** One threshold against one value the run measured. */
export const thresholdCheckSchema = z.strictObject({
  threshold: nameSchema,
  quantity: z.enum(THRESHOLD_QUANTITY_IDS),
  region: nameSchema,
  target: nameSchema,
  probe: z.enum(PROBE_KINDS),
  variant: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  value: z.number(),
  max: z.number().nullable(),
  min: z.number().nullable(),
  breached: z.boolean(),
});
export type ThresholdCheck = z.infer<typeof thresholdCheckSchema>;

/** The plan's thresholds against a run: every value checked, and what could not be checked and why. */
export const thresholdOutcomeSchema = z.strictObject({
  checks: z.array(thresholdCheckSchema),
  unchecked: z.array(z.strictObject({ threshold: nameSchema, where: z.string(), reason: z.string() })),
});
export type ThresholdOutcome = z.infer<typeof thresholdOutcomeSchema>;
