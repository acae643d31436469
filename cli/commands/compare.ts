// `probefleet compare EARLIER... AFTER`: what changed in a run against its baseline, the earlier
// runs (run JSON files, or stored run ids with --redis), quantity by quantity, with a verdict and
// its reason; `--previous` compares a stored run with the earlier stored runs of its plan (or
// reads the comparison the coordinator stored). `--fail-on` turns regressions into exit code 3.
import type { Argv, CommandModule } from 'yargs';
import { BadArgumentError } from '../../common/bad-input.js';
import type { RunComparison } from '../../contracts/comparison.js';
import { compareInThread, type ComparisonRequest } from '../../coordinator/compare/compare-thread.js';
import {
  renderComparisonHtml,
  renderComparisonMarkdown,
  renderComparisonText,
} from '../../coordinator/compare/render.js';
import { EXIT_REGRESSED } from '../exit-codes.js';
import type { ArgsOf } from '../options/args.js';
import { prefixOf, redisArgs, redisTimeoutArg, redisUrlFrom } from '../options/redis.js';
import { comparisonHeapArgs, comparisonHeapMbOf } from '../options/comparison-heap.js';
import { writeRenderedFiles } from './report-files.js';
import { printableJsonText } from '../../common/printable.js';

const options = (y: Argv) =>
  comparisonHeapArgs(redisTimeoutArg(redisArgs(y)))
    .positional('runs', {
      type: 'string',
      array: true,
      describe:
        'the earlier runs (the baseline), then the new run last: run JSONs (run --json), or with --redis stored run ids',
    })
    .option('previous', {
      type: 'boolean',
      describe:
        'with --redis: compare one stored run (the newest when none is named) with the earlier stored runs of its plan',
    })
    .option('baseline', {
      type: 'number',
      describe: "with --previous: how many earlier runs make the baseline (default: the plan's baseline.runs, else 7)",
    })
    .option('fail-on', {
      type: 'string',
      describe:
        '"regression": exit 3 when a quantity regressed or a warning or critical finding appeared; "N%": only for regressions of at least N% (findings still count)',
    })
    .option('json', {
      type: 'string',
      describe: 'write the comparison (probefleet.compare/v3) to this file (- for stdout)',
    })
    .option('markdown', { type: 'string', describe: 'write it as Markdown to this file (- for stdout)' })
    .option('html', {
      type: 'string',
      describe: 'write it as one self-contained HTML page, a before/after chart per region, to this file',
    });

const RENDERERS = {
  json: (c: RunComparison) => `${printableJsonText(c, 2)}\n`,
  markdown: renderComparisonMarkdown,
  html: renderComparisonHtml,
};

/** What `--fail-on` asks for: any regression, or those of at least a share of the value before. */
export type FailOn = { minRelative: number };

export function parseFailOn(value: string): FailOn {
  if (value === 'regression') return { minRelative: 0 };
  const percent = /^(\d+(?:\.\d+)?)%$/.exec(value);
  if (percent) return { minRelative: Number(percent[1]) / 100 };
  throw new BadArgumentError(`--fail-on: expected "regression" or a percentage such as "20%", got "${value}"`);
}

/** What makes `--fail-on` exit 3, in one line each. */
export function failures(c: RunComparison, failOn: FailOn): string[] {
  const regressions = c.quantities.filter(
    (q) => q.verdict === 'regressed' && (q.relativeChange === null || Math.abs(q.relativeChange) >= failOn.minRelative),
  );
  const findings = c.findings.filter((f) => f.change === 'appeared' && f.severity !== 'info');
  return [
    ...regressions.map(
      (q) => `regressed: ${q.region} ${q.target} ${q.probe} ${Object.values(q.variant).join(' ')} ${q.quantity}`,
    ),
    ...findings.map((f) => `finding appeared: ${f.code} (${f.target}, ${f.region})`),
  ];
}

async function comparisonAsked(args: ArgsOf<typeof options>, heapMb: number): Promise<RunComparison> {
  const useRedis = redisUrlFrom(args) !== undefined;
  const runs = args.runs ?? [];
  if (args.baseline !== undefined && (!Number.isInteger(args.baseline) || args.baseline < 1 || args.baseline > 50))
    throw new BadArgumentError(`--baseline: expected a number of earlier runs from 1 to 50, got ${args.baseline}`);
  if (args.previous) {
    if (!useRedis) throw new BadArgumentError('--previous reads stored runs: give --redis URL (or set REDIS_URL)');
    if (runs.length > 1) throw new BadArgumentError('--previous takes one run id (or none for the newest stored run)');
  } else {
    if (runs.length < 2)
      throw new BadArgumentError(
        'compare needs the earlier runs and then the new one: EARLIER... AFTER (or --redis URL --previous [RUN])',
      );
    if (args.baseline !== undefined)
      throw new BadArgumentError(
        '--baseline counts stored runs for --previous; otherwise the baseline is the runs given before the last',
      );
  }
  // Loaded only here: comparing run files needs no Redis client (the thread opens its own).
  const fleetOptions = useRedis ? await import('../options/fleet.js') : undefined;
  const stored = fleetOptions && {
    redis: fleetOptions.redisSettingsOf(args, { bounded: true }),
    prefix: prefixOf(args),
  };
  const request: ComparisonRequest = !stored
    ? { files: runs }
    : args.previous
      ? { stored, previous: runs[0], baselineRuns: args.baseline }
      : { stored, runs };
  const made = await compareInThread(request, {
    logLevel: process.env.PROBEFLEET_LOG_LEVEL ?? 'warn',
    heapMb,
  }).catch((err: unknown) => {
    throw fleetOptions ? fleetOptions.withUrlSource(err, args) : err;
  });
  if ('noBaseline' in made) throw new BadArgumentError(made.noBaseline);
  return made;
}

export const compareCommand: CommandModule<object, ArgsOf<typeof options>> = {
  command: 'compare [runs..]',
  describe:
    "What changed in a run against its baseline of earlier runs: each quantity's baseline and new value, a verdict and its reason; findings that appeared or disappeared",
  builder: options,
  handler: async (args) => {
    const failOn = args.failOn === undefined ? undefined : parseFailOn(args.failOn);
    const comparison = await comparisonAsked(args, comparisonHeapMbOf(args));
    const files = { json: args.json, markdown: args.markdown, html: args.html };
    if (Object.values(files).some(Boolean)) await writeRenderedFiles(comparison, files, RENDERERS);
    else process.stdout.write(renderComparisonText(comparison));
    const failed = failOn ? failures(comparison, failOn) : [];
    if (failed.length > 0) {
      process.stderr.write(`probefleet: --fail-on ${args.failOn}: ${failed.length} found\n  ${failed.join('\n  ')}\n`);
      process.exitCode = EXIT_REGRESSED;
    }
  },
};
