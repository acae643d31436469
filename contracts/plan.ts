// The experiment plan: what a user writes in YAML. The one source of truth for its shape;
// contracts/plan.schema.json is generated from it for editors.
import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';
import { distinct, nameSchema } from './common.js';
import { isLabUrl, LAB_ROLES, parseLabUrl } from './lab-roles.js';
import { resolverSchema } from './probes/dns.js';
import { DNS_CACHES, hostNameOf } from './resolver.js';
import {
  capsExceeded,
  JOB_LIMITS,
  overCapMessage,
  PLAN_LIMITS,
  TARGET_FILE_LIMITS,
  type JobDemands,
} from './limits.js';
import {
  checksReadBody,
  METHODS,
  METHODS_WITHOUT_BODY,
  REQUEST_BODY_BYTES,
  responseChecksSchema,
  type Method,
} from './request.js';
import { headerValueProblem, replaceUrlReferences, urlSecretsProblems, wholeReference } from './secrets.js';
import { schemeOf, type RequestSupport, type Scheme } from './probes/define.js';
import { PROBE_KINDS, PROBES, shardSpecOf, type ProbeKind, type ProbeParams } from './probes/index.js';
import {
  targetLabelsSchema,
  targetLabelValuesSchema,
  tooManyValuesMessage,
  undeclaredLabelMessage,
} from './target-labels.js';
import { alertSettingsSchema, baselineSettingsSchema, thresholdName, thresholdSchema } from './thresholds.js';

/**
 * An http:// or https:// URL: what a job carries. Its user:password part and query values may
 * hold references to the worker's environment (contracts/secrets.ts), parsed as placeholders here.
 */
export const httpUrlSchema = z
  .string()
  .max(PLAN_LIMITS.stringChars)
  .superRefine((value, ctx) => {
    for (const message of httpUrlProblemsOf(value)) ctx.addIssue({ code: 'custom', message });
  });

/** What is wrong with an http(s) URL: a pure function of the string, so remembered for the last
 * URLs seen. A worker validates every job it takes, and a plan's jobs share a few target URLs:
 * parsing each URL twice per job would cost a tenth of a worker's CPU per one-request job. */
const urlProblems = new Map<string, string[]>();
const URLS_REMEMBERED = 1_000;

function httpUrlProblemsOf(value: string): string[] {
  let problems = urlProblems.get(value);
  if (problems) return problems;
  problems = urlSecretsProblems(value);
  if (problems.length === 0) problems = httpUrlShapeProblems(value);
  if (urlProblems.size >= URLS_REMEMBERED) urlProblems.clear();
  urlProblems.set(value, problems);
  return problems;
}

function httpUrlShapeProblems(value: string): string[] {
  let url: URL;
  try {
    url = new URL(replaceUrlReferences(value, () => 'x'));
  } catch {
    return [`not a valid URL: "${value}"`];
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return [`unsupported URL scheme "${url.protocol}" (use http:// or https://)`];
  if (url.port === '0') return ['port 0 is no port a server listens on (leave it out for 80 or 443)'];
  return [];
}

/** What a plan's target may name: an http(s) URL, or a lab server by role (`lab:keepalive/nagle`). */
const targetUrlSchema = z.string().superRefine((value, ctx) => {
  if (!isLabUrl(value)) {
    const checked = httpUrlSchema.safeParse(value);
    for (const issue of checked.error?.issues ?? []) ctx.addIssue({ code: 'custom', message: issue.message });
    return;
  }
  const parsed = parseLabUrl(value);
  if ('problem' in parsed) return void ctx.addIssue({ code: 'custom', message: parsed.problem });
  // Its path and query are sent as written: the same rules as any URL's (no control character, credentials as references).
  for (const message of urlSecretsProblems(value)) ctx.addIssue({ code: 'custom', message });
});

/** What is wrong with a target's URL (http(s), or a lab server by role); empty when nothing. */
export function targetUrlProblems(value: string): string[] {
  return targetUrlSchema.safeParse(value).error?.issues.map((issue) => issue.message) ?? [];
}

/** The scheme of a target's URL, a lab URL's included; undefined when it has none we know. */
export function targetScheme(url: string): Scheme | undefined {
  if (isLabUrl(url)) {
    const parsed = parseLabUrl(url);
    return 'role' in parsed ? LAB_ROLES[parsed.role] : undefined;
  }
  return URL.canParse(url) ? schemeOf(url) : undefined;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export const targetTlsSchema = z
  .strictObject({
    /** Accept any certificate: for self-signed lab targets only. */
    insecure: z.boolean().default(false),
    /** PEM file with the CA(s) to trust, relative to the plan file. */
    ca: z.string().min(1).optional(),
    /** SNI and certificate name, when it differs from the URL's host. */
    servername: z
      .string()
      .regex(/^[\x21-\x7e]+$/, 'must be a host name of visible ASCII characters')
      .optional(),
    /** The client certificate (PEM, its chain after it) for servers that ask for one: a file
     * relative to the plan (read when the plan loads; a certificate is not secret), or a reference. */
    cert: z.string().min(1).max(PLAN_LIMITS.stringChars).optional(),
    /** The client certificate's private key: a reference only (`${env:NAME}` or `${file:/path}`),
     * resolved on the worker, so the key never travels in jobs or sits in Redis. */
    key: z
      .string()
      .refine((value) => wholeReference(value) !== undefined, {
        message:
          "a private key must be a reference to the worker's secret: ${env:NAME} (the PEM in a variable) or ${file:/absolute/path}, so it never travels in jobs or sits in Redis",
      })
      .optional(),
    /** The key's passphrase, when it is encrypted: `${env:NAME}`. */
    passphrase: z
      .string()
      .refine((value) => wholeReference(value)?.kind === 'env', {
        message: 'a passphrase must be a reference: ${env:NAME}, set on the workers',
      })
      .optional(),
  })
  .superRefine((tls, ctx) => {
    if ((tls.cert === undefined) !== (tls.key === undefined))
      ctx.addIssue({
        code: 'custom',
        path: [tls.cert === undefined ? 'key' : 'cert'],
        message: 'a client certificate needs its key, and a key its certificate: give cert and key together',
      });
    if (tls.passphrase !== undefined && tls.key === undefined)
      ctx.addIssue({ code: 'custom', path: ['passphrase'], message: 'a passphrase is for a key: give key too' });
  });

/** A target's `dns`: where its host name is looked up, and whether the answer is kept. */
export const targetDnsSchema = z.strictObject({
  /** `system` (the worker's resolver: getaddrinfo, /etc/hosts included), `lab:dns`, or
   * `HOST[:PORT]` of a DNS server asked directly (checked by the worker's target policy).
   * @defaultValue system */
  server: resolverSchema.default('system'),
  /** cold: every new connection looks the name up afresh (nothing kept in the client); warm: the
   * answer is looked up before the measurement and kept for its TTL, as a long-lived client does.
   * @defaultValue cold */
  cache: z.enum(DNS_CACHES).default('cold'),
});
export type TargetDns = z.output<typeof targetDnsSchema>;

export const targetSchema = z.strictObject({
  name: nameSchema,
  /** http:// or https://, or `lab:SERVER/path` for a lab server by role (resolved where the lab is known). */
  url: targetUrlSchema,
  /** Extra request headers sent with every request to this target. Values may refer to the
   * worker's environment (`${env:NAME}`); credentials (Authorization, Cookie...) must. */
  headers: z
    .record(z.string().regex(HEADER_NAME, 'not a valid header name'), z.string().max(PLAN_LIMITS.stringChars))
    .superRefine((headers, ctx) => {
      for (const [name, value] of Object.entries(headers)) {
        const problem = headerValueProblem(name, value);
        if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
      }
    })
    .optional(),
  tls: targetTlsSchema.optional(),
  /** The request method. @defaultValue GET */
  method: z.enum(METHODS).optional(),
  /** The request body: inline text, or `{ file: PATH }` relative to the plan (read when the plan
   * is loaded: the plan as run holds its text). At most REQUEST_BODY_BYTES. */
  body: z.union([z.string(), z.strictObject({ file: z.string().min(1) })]).optional(),
  /** What a response must be to count as a good sample; a 2xx status when absent. */
  checks: responseChecksSchema.optional(),
  /** An HTTP proxy the connections go through (CONNECT), `http://[user:${env:PASS}@]host:port`;
   * `none`: none, whatever the worker's HTTPS_PROXY says. Absent: the worker's environment decides, as for curl. */
  proxy: z
    .string()
    .superRefine((value, ctx) => {
      if (value === 'none') return;
      if (!value.startsWith('http://'))
        return void ctx.addIssue({
          code: 'custom',
          message:
            'a proxy is an http:// URL (CONNECT over plain TCP to the proxy; https:// and socks proxies are not supported), or none',
        });
      for (const issue of httpUrlSchema.safeParse(value).error?.issues ?? [])
        ctx.addIssue({ code: 'custom', message: issue.message });
    })
    .optional(),
  /** How the worker resolves the URL's host name for the target's connections. Absent: the
   * system's resolver, a lookup per connection. */
  dns: targetDnsSchema.optional(),
  /** Which IP family the connections use: 4 or 6 only; `both`: one target per family
   * (`NAME-ipv4`, `NAME-ipv6`), measured side by side; `happy-eyeballs`: both raced as Node does
   * (autoSelectFamily). Absent: the first address the name resolves to. */
  ipFamily: z
    .union([z.literal(4), z.literal(6), z.enum(['both', 'happy-eyeballs'])], {
      error: 'ipFamily is 4, 6, both or happy-eyeballs',
    })
    .optional(),
  /** Labels the target carries into results, reports and metrics (`team: payments`); each name
   * one of the plan's `targetLabels`. */
  labels: targetLabelValuesSchema.optional(),
});
export type Target = z.output<typeof targetSchema>;
export type IpFamily = NonNullable<Target['ipFamily']>;

/** What `ipFamily: both` appends to a target's name for each family's target. */
export const DUAL_STACK_SUFFIXES = { 4: '-ipv4', 6: '-ipv6' } as const;

/** A pattern of `targetFiles[].files`: a path relative to the plan, `*` in its last part at most once. */
const targetFilePatternSchema = z
  .string()
  .min(1)
  .max(PLAN_LIMITS.stringChars)
  .superRefine((pattern, ctx) => {
    const problem = targetFilePatternProblem(pattern);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/** What is wrong with a target file pattern (as Prometheus's file_sd: a JSON or YAML file, a `*` in its name at most). */
export function targetFilePatternProblem(pattern: string): string | undefined {
  const slash = pattern.lastIndexOf('/');
  const [dir, base] = [pattern.slice(0, slash + 1), pattern.slice(slash + 1)];
  if (dir.includes('*')) return `"${pattern}": only the file name may hold a "*" (as in Prometheus's file_sd)`;
  if (base.split('*').length > 2) return `"${pattern}": at most one "*" in the file name`;
  if (!/\.(json|ya?ml)$/.test(base)) return `"${pattern}": a target file is .json, .yml or .yaml`;
  return undefined;
}

export const TARGET_FILE_SCHEMES = ['http', 'https'] as const;

/**
 * `targetFiles:` entry: files of targets in Prometheus's file_sd format
 * (`[{targets: [...], labels: {...}}]`, JSON or YAML), read each time the plan is loaded (and at
 * each firing of its schedule), and the settings every target of them gets. A target in a file is
 * an http(s):// URL, or `host:port` made one with `scheme` and `path`.
 */
export const targetFileGroupSchema = targetSchema.omit({ name: true, url: true, body: true, labels: true }).extend({
  /** Names the group's targets together in an experiment's `targets`. */
  name: nameSchema.optional(),
  /** Paths relative to the plan (or absolute); the file name may hold one `*`. */
  files: distinct(z.array(targetFilePatternSchema).min(1).max(TARGET_FILE_LIMITS.files), 'file'),
  /** The scheme of `host:port` targets. @defaultValue http (as Prometheus's) */
  scheme: z.enum(TARGET_FILE_SCHEMES).default('http'),
  /** The path (and query) of `host:port` targets. @defaultValue / */
  path: z
    .string()
    .max(PLAN_LIMITS.stringChars)
    .regex(/^\/[^\s#]*$/, 'a path starts with "/" and holds no space or "#"')
    .default('/'),
  /** Labels every target of these files gets; a file's own labels for a target win. */
  labels: targetLabelValuesSchema.optional(),
});
export type TargetFileGroup = z.output<typeof targetFileGroupSchema>;

/** A target of the plan as run: hand-written, or from a target file (`file`, relative to the plan). */
export const runTargetSchema = targetSchema.extend({
  /** The target file it came from, as the plan names it (targets from files only). */
  file: z.string().optional(),
  /** The name of its targetFiles entry, if it has one. */
  group: nameSchema.optional(),
  /** The target's name as written, for each of the two targets its `ipFamily: both` made. */
  dualStackOf: nameSchema.optional(),
});
export type RunTarget = z.output<typeof runTargetSchema>;

/** What a list of targets (an experiment's, a threshold's) may name a target by: its name, the
 * name written for it when `ipFamily: both` made it, and its targetFiles entry. */
export interface TargetNames {
  name: string;
  dualStackOf?: string;
  group?: string;
}

/** Whether an experiment whose `targets` are `only` covers the target: all targets when it lists
 * none; else the targets it names (by any of their names). */
export function covers(only: readonly string[] | undefined, target: TargetNames): boolean {
  return listedAt(only, target) !== -1;
}

/** Where `only` names the target (by any of its names); -1: not at all; undefined: `only` is absent (all targets). */
export function listedAt(only: readonly string[] | undefined, target: TargetNames): number | undefined {
  if (!only) return undefined;
  for (const name of [target.name, target.dualStackOf, target.group]) {
    const at = name === undefined ? -1 : only.indexOf(name);
    if (at !== -1) return at;
  }
  return -1;
}

/** What is wrong with a target's method and body together; undefined when nothing. */
export function requestBodyProblem(target: { method?: Method; body?: unknown }): string | undefined {
  const method = target.method ?? 'GET';
  if (target.body !== undefined && METHODS_WITHOUT_BODY.includes(method))
    return `a ${method} request carries no body (servers may refuse one): give method POST, PUT, PATCH, DELETE or OPTIONS, or no body`;
  if (typeof target.body === 'string' && Buffer.byteLength(target.body) > REQUEST_BODY_BYTES)
    return `the body is ${Buffer.byteLength(target.body).toLocaleString('en-US')} bytes, over the limit of ${REQUEST_BODY_BYTES.toLocaleString('en-US')}`;
  return undefined;
}

/** The worker sends a URL's user:password as the Authorization header: a target gives one of the two. */
export function credentialsTwiceProblem(target: { url: string; headers?: Record<string, string> }): string | undefined {
  const authorization = Object.keys(target.headers ?? {}).find((name) => name.toLowerCase() === 'authorization');
  return authorization && /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*@/.test(target.url)
    ? `the URL's user:password and the ${authorization} header both give credentials: give one`
    : undefined;
}

function experimentSchemaFor<K extends ProbeKind>(kind: K) {
  return PROBES[kind].params.extend({
    probe: z.literal(kind),
    /** Target names this experiment runs against; all targets when absent. */
    targets: distinct(z.array(nameSchema).min(1), 'target').optional(),
  });
}

export const experimentSchema = z.discriminatedUnion(
  'probe',
  PROBE_KINDS.map(experimentSchemaFor) as [
    ReturnType<typeof experimentSchemaFor>,
    ...ReturnType<typeof experimentSchemaFor>[],
  ],
  // zod cannot tie each member's `probe` literal to its own parameters through a generic map;
  // the hand-written type below does, and every member is built by the same function.
) as unknown as z.ZodType<Experiment>;
export type Experiment = {
  [K in ProbeKind]: ProbeParams<K> & { probe: K; targets?: string[] };
}[ProbeKind];

export const scheduleSchema = z
  .strictObject({
    /** Five-field cron expression, e.g. "0 2 * * *" for 02:00 every night. */
    cron: z.string().min(1),
    /** IANA time zone the cron expression is read in. */
    tz: z.string().default('UTC'),
  })
  .superRefine((schedule, ctx) => {
    try {
      new Intl.DateTimeFormat('en', { timeZone: schedule.tz });
    } catch {
      ctx.addIssue({ code: 'custom', path: ['tz'], message: `unknown time zone "${schedule.tz}"` });
      return;
    }
    if (schedule.cron.trim().split(/\s+/).length !== 5) {
      ctx.addIssue({
        code: 'custom',
        path: ['cron'],
        message: `cron needs 5 fields (minute hour day month weekday): "${schedule.cron}"`,
      });
      return;
    }
    try {
      CronExpressionParser.parse(schedule.cron, { tz: schedule.tz });
    } catch (err) {
      ctx.addIssue({
        code: 'custom',
        path: ['cron'],
        message: `invalid cron expression "${schedule.cron}": ${(err as Error).message}`,
      });
    }
  });

/** The fields of a plan; `targets` differ between the plan as written and the plan as run. */
function planSchemaWith<T extends z.ZodType>(targets: T) {
  return (
    z
      .strictObject({
        name: nameSchema,
        description: z.string().max(PLAN_LIMITS.stringChars).optional(),
        /** Regions whose workers run every experiment; `local` is the embedded runner's region. */
        regions: z.array(nameSchema).min(1).max(50).default(['local']),
        targets,
        /** Targets from files in Prometheus's file_sd format (docs/plan.md, "Targets from files"). */
        targetFiles: z.array(targetFileGroupSchema).min(1).max(20).optional(),
        /** The labels targets may carry (`[team, service]`): into results, reports and `probefleet_target_info`. */
        targetLabels: targetLabelsSchema.optional(),
        experiments: z.array(experimentSchema).min(1).max(50),
        schedule: scheduleSchema.optional(),
        /** Time bound of each job; a probe still running then stops and reports what it has. At most
         * JOB_LIMITS.durationSeconds, checked below so that the message names the cap. */
        jobTimeoutSeconds: z.int().min(1).meta({ maximum: JOB_LIMITS.durationSeconds }).default(300),
        /** How many earlier runs each comparison of this plan's runs uses (docs/compare.md). */
        baseline: baselineSettingsSchema.optional(),
        /** Bounds on the run's quantities, checked by `run` and the coordinator (docs/thresholds.md). */
        thresholds: z.array(thresholdSchema).max(100).optional(),
        /** This plan's values for the alerts' fixed thresholds (`probefleet alerts`). */
        alerts: alertSettingsSchema.optional(),
      })
      // Cross-references run even where the schema found problems, so a plan's mistakes come out in one
      // pass: each check takes only the parts that are well-formed on their own.
      .superRefine((raw, ctx) => checkCrossReferences(raw as unknown, ctx), { when: () => true })
      // Caps need each experiment's parameters with their defaults: checked once those parsed.
      .superRefine((plan, ctx) => {
        if (plan.jobTimeoutSeconds > JOB_LIMITS.durationSeconds) {
          ctx.addIssue({
            code: 'custom',
            path: ['jobTimeoutSeconds'],
            message: overCapMessage('durationSeconds', `${plan.jobTimeoutSeconds} s`),
          });
        }
        plan.experiments.forEach((experiment, i) => {
          const demands = (PROBES[experiment.probe].demands as (params: Experiment) => JobDemands)(experiment);
          for (const { param, message } of [
            ...capsExceeded(demands),
            ...(shardSpecOf(experiment.probe)?.problems(experiment) ?? []),
          ])
            ctx.addIssue({ code: 'custom', path: ['experiments', i, param], message });
        });
      })
  );
}

/** The plan as written: at most 100 targets by hand, and any from files (`targetFiles`). */
export const planSchema = planSchemaWith(z.array(targetSchema).min(1).max(100).optional());

/** The plan as run (a report, a run in Redis, a schedule): the targets of its files among its own. */
export const planAsRunSchema = planSchemaWith(
  z
    .array(runTargetSchema)
    .min(1)
    .max(100 + TARGET_FILE_LIMITS.targets),
);

const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const nameOf = (value: unknown): string | undefined => {
  const name = (value as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : undefined;
};

function checkCrossReferences(raw: unknown, ctx: z.RefinementCtx): void {
  const plan = (raw ?? {}) as Record<string, unknown>;
  const regions = asArray(plan.regions).filter((r): r is string => typeof r === 'string');
  if (regions.length === asArray(plan.regions).length) reportDuplicates(regions, ['regions'], 'region', ctx);
  if (plan.targets === undefined && plan.targetFiles === undefined)
    ctx.addIssue({ code: 'custom', path: ['targets'], message: 'is required (or targetFiles: targets from files)' });
  const rawTargets = asArray(plan.targets);
  const names = rawTargets.map(nameOf);
  reportDuplicates(
    names.map((n) => n ?? '\u0000'),
    ['targets'],
    'target name',
    ctx,
    ['name'],
    new Set(['\u0000']),
  );
  const groups = asArray(plan.targetFiles).map(nameOf);
  reportGroupNames(groups, new Set(names.filter((n): n is string => n !== undefined)), ctx);
  // Targets that are well-formed on their own, at their index (of the plan as written, or as run).
  const targets = rawTargets.map((t) => {
    const parsed = runTargetSchema.safeParse(t);
    return parsed.success ? parsed.data : undefined;
  });
  targets.forEach((target, i) => {
    if (target?.tls && targetScheme(target.url) === 'http') {
      ctx.addIssue({
        code: 'custom',
        path: ['targets', i, 'tls'],
        message: 'tls settings apply to https:// targets only',
      });
    }
    const bodyProblem = target && requestBodyProblem(target);
    if (bodyProblem) ctx.addIssue({ code: 'custom', path: ['targets', i, 'body'], message: bodyProblem });
    const twice = target && credentialsTwiceProblem(target);
    if (twice) ctx.addIssue({ code: 'custom', path: ['targets', i, 'url'], message: twice });
    const resolution = target && resolutionProblem(target);
    if (resolution)
      ctx.addIssue({ code: 'custom', path: ['targets', i, resolution.field], message: resolution.message });
  });
  reportDualStackNames(targets, ctx);
  reportTargetLabels(plan, rawTargets, ctx);
  const experiments = asArray(plan.experiments).map((e) => {
    const parsed = experimentSchema.safeParse(e);
    return parsed.success ? parsed.data : undefined;
  });
  experiments.forEach((experiment, i) => {
    if (experiment) reportUnmeasurableTargets(targets, experiment, i, ctx);
    if (experiment) reportUnappliedRequestSettings(targets, experiment, i, ctx);
  });
  reportRepeatedExperiments(targets, experiments, ctx);
  // A target `ipFamily: both` made is named by the name written too (its own are NAME-ipv4, NAME-ipv6).
  const known = new Set([
    ...names.filter((n): n is string => n !== undefined),
    ...targets.flatMap((t) => (t?.dualStackOf ? [t.dualStackOf] : [])),
  ]);
  reportThresholdReferences(plan, regions, known, ctx);
  // An experiment names targets, or targetFiles entries (all of their targets).
  const selectable = new Set([...known, ...groups.filter((n): n is string => n !== undefined)]);
  asArray(plan.experiments).forEach((experiment, i) => {
    asArray((experiment as { targets?: unknown } | null)?.targets).forEach((name, j) => {
      if (typeof name === 'string' && !selectable.has(name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['experiments', i, 'targets', j],
          message: `unknown target "${name}" (${someNames(selectable, groups.some(Boolean) ? 'targets and targetFiles' : 'targets')})`,
        });
      }
    });
  });
}

/** The IP address family of a target URL's host, or `name` when it is a host name (a lab
 * server's URL is the lab's address, but for `lab:dns/NAME`). */
function hostKindOf(url: string): 'name' | 4 | 6 {
  if (isLabUrl(url)) {
    const parsed = parseLabUrl(url);
    return 'role' in parsed && parsed.role !== 'dns' ? 4 : 'name';
  }
  if (!URL.canParse(url)) return 'name';
  const host = new URL(url).hostname;
  return host.startsWith('[') ? 6 : hostNameOf(url) === undefined ? 4 : 'name';
}

/** A target's `dns` and `ipFamily` need a host name to look up (an address is connected to as it is). */
function resolutionProblem(target: RunTarget): { field: 'dns' | 'ipFamily'; message: string } | undefined {
  const kind = hostKindOf(target.url);
  if (kind === 'name') return undefined;
  const address = isLabUrl(target.url)
    ? "the lab's address"
    : `the IPv${kind} address ${new URL(target.url).hostname.replace(/^\[(.*)\]$/, '$1')}`;
  if (target.dns)
    return {
      field: 'dns',
      message: `the URL's host is ${address}: there is no name to look up (give the URL with a host name)`,
    };
  if (target.ipFamily !== undefined && target.ipFamily !== kind)
    return {
      field: 'ipFamily',
      message: `the URL's host is ${address}: ipFamily ${target.ipFamily} needs a host name with ${target.ipFamily === 'both' || target.ipFamily === 'happy-eyeballs' ? 'IPv4 and IPv6 addresses' : `an IPv${target.ipFamily} address`}`,
    };
  return undefined;
}

/** `ipFamily: both` names a target's two targets NAME-ipv4 and NAME-ipv6: within the name's 63
 * characters, and no other target's name. */
function reportDualStackNames(targets: (RunTarget | undefined)[], ctx: z.RefinementCtx): void {
  const names = new Set(targets.map((t) => t?.name));
  for (const [i, target] of targets.entries()) {
    if (target?.ipFamily !== 'both') continue;
    for (const suffix of Object.values(DUAL_STACK_SUFFIXES)) {
      const made = `${target.name}${suffix}`;
      const message = !nameSchema.safeParse(made).success
        ? `ipFamily both names its targets ${target.name}-ipv4 and ${target.name}-ipv6: the name may be at most ${63 - suffix.length} characters`
        : names.has(made)
          ? `ipFamily both names a target ${made}, and another target has that name`
          : undefined;
      if (message) {
        ctx.addIssue({ code: 'custom', path: ['targets', i, 'name'], message });
        break;
      }
    }
  }
}

/** "targets: api, web" (the first 20 of many, then how many more). */
function someNames(names: Set<string>, what: string): string {
  const all = [...names];
  const shown = all.slice(0, 20).join(', ');
  return `${what}: ${shown}${all.length > 20 ? ` and ${all.length - 20} more` : ''}`;
}

/** targetFiles entries go by names of their own: not another entry's, not a target's. */
function reportGroupNames(groups: (string | undefined)[], targets: Set<string>, ctx: z.RefinementCtx): void {
  groups.forEach((name, i) => {
    if (name === undefined) return;
    if (groups.indexOf(name) !== i)
      ctx.addIssue({
        code: 'custom',
        path: ['targetFiles', i, 'name'],
        message: `duplicate targetFiles name "${name}"`,
      });
    else if (targets.has(name))
      ctx.addIssue({
        code: 'custom',
        path: ['targetFiles', i, 'name'],
        message: `"${name}" names a target too: an experiment's targets would not say which`,
      });
  });
}

/**
 * Every label a target or a targetFiles entry gives is one of `targetLabels`, and no label takes
 * more than TARGET_FILE_LIMITS.labelValues values over the plan's targets (so the series and
 * legends a label makes stay few). The plan as run holds its files' targets, so this covers them.
 */
function reportTargetLabels(plan: Record<string, unknown>, rawTargets: unknown[], ctx: z.RefinementCtx): void {
  const declaredParse = targetLabelsSchema.safeParse(plan.targetLabels);
  const declared = plan.targetLabels === undefined ? [] : declaredParse.success ? declaredParse.data : undefined;
  // Undeclared labels are named only when the declaration itself reads: else it is the problem.
  const checkNames = (labels: unknown, path: (string | number)[]) => {
    if (!declared || typeof labels !== 'object' || labels === null || Array.isArray(labels)) return;
    for (const name of Object.keys(labels))
      if (!declared.includes(name))
        ctx.addIssue({ code: 'custom', path: [...path, name], message: undeclaredLabelMessage(name, declared) });
  };
  asArray(plan.targetFiles).forEach((group, i) => {
    checkNames((group as { labels?: unknown } | null)?.labels, ['targetFiles', i, 'labels']);
  });
  const values = new Map<string, Set<string>>();
  rawTargets.forEach((target, i) => {
    const labels = (target as { labels?: unknown } | null)?.labels;
    checkNames(labels, ['targets', i, 'labels']);
    if (typeof labels !== 'object' || labels === null) return;
    for (const [name, value] of Object.entries(labels)) {
      if (typeof value !== 'string' || value === '') continue;
      const seen = values.get(name) ?? values.set(name, new Set()).get(name)!;
      if (seen.has(value) || seen.size > TARGET_FILE_LIMITS.labelValues) continue;
      seen.add(value);
      if (seen.size > TARGET_FILE_LIMITS.labelValues)
        ctx.addIssue({ code: 'custom', path: ['targets', i, 'labels', name], message: tooManyValuesMessage(name) });
    }
  });
}

/** Thresholds name regions and targets the plan has, and go by distinct names. */
function reportThresholdReferences(
  plan: Record<string, unknown>,
  regions: string[],
  targets: Set<string>,
  ctx: z.RefinementCtx,
): void {
  const declaredRegions = plan.regions === undefined ? ['local'] : regions;
  const seen = new Map<string, number>();
  asArray(plan.thresholds).forEach((raw, i) => {
    const parsed = thresholdSchema.safeParse(raw);
    if (!parsed.success) return;
    const t = parsed.data;
    t.regions?.forEach((region, j) => {
      if (!declaredRegions.includes(region))
        ctx.addIssue({
          code: 'custom',
          path: ['thresholds', i, 'regions', j],
          message: `unknown region "${region}" (regions: ${declaredRegions.join(', ')})`,
        });
    });
    t.targets?.forEach((name, j) => {
      if (!targets.has(name))
        ctx.addIssue({
          code: 'custom',
          path: ['thresholds', i, 'targets', j],
          message: `unknown target "${name}" (targets: ${[...targets].join(', ')})`,
        });
    });
    const name = thresholdName(t);
    const first = seen.get(name);
    if (first === undefined) seen.set(name, i);
    else
      ctx.addIssue({
        code: 'custom',
        path: ['thresholds', i, 'name'],
        message: `thresholds[${first}] goes by the name "${name}" too: give each a distinct name`,
      });
  });
}

/** The plan as run: every target, those from files included. */
export type Plan = Omit<z.output<typeof planAsRunSchema>, 'experiments'> & { experiments: Experiment[] };
/** The plan as written, before its target files are read. */
export type WrittenPlan = Omit<z.output<typeof planSchema>, 'experiments'> & { experiments: Experiment[] };

/** What a target asks of its requests beyond a GET with a 2xx answer, as `RequestSupport` would
 * have to allow it; undefined fields ask nothing. */
function requestSettingsOf(target: Target): { body?: string; checks?: AskedChecks } {
  const checks = target.checks;
  const reads = checks && (checksReadBody(checks) ? 'body' : checks.headers ? 'headers' : undefined);
  const exactStatus = checks?.status.some((s) => typeof s === 'number');
  return {
    ...(target.method !== undefined && target.method !== 'GET'
      ? { body: `method ${target.method}` }
      : target.body !== undefined
        ? { body: 'a body' }
        : {}),
    ...(reads === 'body'
      ? { checks: 'status, headers and body' }
      : reads === 'headers'
        ? { checks: 'status and headers' }
        : exactStatus
          ? { checks: 'status' }
          : checks
            ? { checks: 'status classes' }
            : {}),
  };
}

const CHECK_LEVELS: RequestSupport['checks'][] = [
  'none',
  'status classes',
  'status',
  'status and headers',
  'status, headers and body',
];

/** What a target's checks ask for, by the least a probe must apply to hold them. */
/** The check levels a target can ask for ('none' is only what a probe may apply). */
type AskedChecks = Exclude<RequestSupport['checks'], 'none'>;

const ASKED_CHECKS: Record<AskedChecks, string> = {
  'status, headers and body': 'body checks',
  'status and headers': 'header checks',
  status: 'exact status codes (200, not 2xx)',
  'status classes': 'status checks',
};

/** A target whose method, body or checks an experiment on it would not apply is refused, rather
 * than measured as if they held (a POST endpoint probed with GETs, a body check never made). */
function reportUnappliedRequestSettings(
  targets: (RunTarget | undefined)[],
  experiment: Experiment,
  i: number,
  ctx: z.RefinementCtx,
): void {
  const support = (PROBES[experiment.probe].request as ((params: Experiment) => RequestSupport) | undefined)?.(
    experiment,
  );
  if (!support) return;
  for (const target of targets) {
    if (!target) continue;
    const at = listedAt(experiment.targets, target);
    if (at === -1) continue;
    const asked = requestSettingsOf(target);
    const unapplied = [
      ...(asked.body && !support.body ? [`${asked.body}`] : []),
      ...(asked.checks && CHECK_LEVELS.indexOf(asked.checks) > CHECK_LEVELS.indexOf(support.checks)
        ? [ASKED_CHECKS[asked.checks]]
        : []),
    ];
    if (unapplied.length === 0) continue;
    ctx.addIssue({
      code: 'custom',
      path: at === undefined ? ['experiments', i, 'probe'] : ['experiments', i, 'targets', at],
      message:
        `probe ${experiment.probe} would not apply target "${target.name}"'s ${unapplied.join(' and ')}` +
        ` (it applies ${support.body ? 'the method and body' : 'no method or body'}, checks: ${support.checks}${support.why ? `; ${support.why}` : ''})` +
        (at === undefined ? `; name the ${targetsWord(target)} it runs on in experiments[${i}].targets` : ''),
    });
  }
}

/** What an experiment's `targets` may name to leave a target out: a target from a file is chosen with its entry. */
const targetsWord = (target: RunTarget) => (target.file === undefined ? 'targets' : 'targets or targetFiles entries');

/** A probe that measures only some URL schemes (tls: https), or only some targets (dns: a host
 * name, no IP address), refuses a target it cannot measure. */
function reportUnmeasurableTargets(
  targets: (RunTarget | undefined)[],
  experiment: { probe: ProbeKind; targets?: string[] },
  i: number,
  ctx: z.RefinementCtx,
): void {
  const { schemes, targetProblem } = PROBES[experiment.probe] as {
    schemes?: readonly Scheme[];
    targetProblem?: (url: string) => string | undefined;
  };
  if (!schemes && !targetProblem) return;
  for (const target of targets) {
    if (!target) continue;
    const at = listedAt(experiment.targets, target);
    if (at === -1) continue;
    const scheme = targetScheme(target.url);
    const problem = targetProblem?.(target.url);
    const message =
      scheme && schemes && !schemes.includes(scheme)
        ? `probe ${experiment.probe} measures ${schemes.map((s) => `${s}://`).join(' and ')} targets only; target "${target.name}" is ${scheme}://`
        : problem && `probe ${experiment.probe} cannot measure target "${target.name}": ${problem}`;
    if (!message) continue;
    ctx.addIssue({
      code: 'custom',
      path: at === undefined ? ['experiments', i, 'probe'] : ['experiments', i, 'targets', at],
      message:
        message +
        (at === undefined ? ` (name the ${targetsWord(target)} it runs on in experiments[${i}].targets)` : ''),
    });
  }
}

/**
 * Two experiments with the same probe and parameters make the same jobs (same ids) on a target
 * they share: a mistake worth naming rather than a silent merge, and what keeps the count of
 * a run's jobs (coordinator/split.ts countJobs) exact.
 */
function reportRepeatedExperiments(
  targets: (RunTarget | undefined)[],
  experiments: (Experiment | undefined)[],
  ctx: z.RefinementCtx,
): void {
  // By name: a target name given twice is its own mistake, reported on the targets.
  const byName = new Map(targets.flatMap((t) => (t ? [[t.name, t] as const] : [])));
  const first = new Map<string, number>();
  experiments.forEach((experiment, i) => {
    if (!experiment) return;
    const { targets: only, ...params } = experiment;
    // The parsed parameters come out in the schema's key order, so equal experiments give equal text.
    const what = JSON.stringify(params);
    for (const name of [...byName.keys()].filter((n) => covers(only, byName.get(n)!))) {
      const earlier = first.get(`${name} ${what}`);
      if (earlier === undefined) {
        first.set(`${name} ${what}`, i);
        continue;
      }
      ctx.addIssue({
        code: 'custom',
        path: ['experiments', i],
        message: `repeats experiments[${earlier}] on target "${name}" (the same probe and parameters make the same jobs)`,
      });
      return;
    }
  });
}

function reportDuplicates(
  values: string[],
  path: (string | number)[],
  what: string,
  ctx: z.RefinementCtx,
  suffix: (string | number)[] = [],
  /** Placeholders for values that are missing, never duplicates of each other. */
  ignored = new Set<string>(),
): void {
  const seen = new Set<string>();
  values.forEach((value, i) => {
    if (seen.has(value) && !ignored.has(value)) {
      ctx.addIssue({ code: 'custom', path: [...path, i, ...suffix], message: `duplicate ${what} "${value}"` });
    }
    seen.add(value);
  });
}
