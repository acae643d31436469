// `probefleet compare BEFORE AFTER`: what changed between two runs (run JSON files, or stored run
// ids with --redis), quantity by quantity, with a 95% interval and a verdict; `--previous` reads
// the comparison the coordinator stored for a run. `--fail-on` turns regressions into exit code 3.
import type { Argv, CommandModule } from 'yargs';
import { BadArgumentError } from '../../common/bad-input.js';
import { createLogger } from '../../common/log.js';
import type { RunComparison } from '../../contracts/comparison.js';
import type { RunReport } from '../../contracts/result.js';
import { compareRuns } from '../../coordinator/compare/compare-runs.js';
import {
  renderComparisonHtml,
  renderComparisonMarkdown,
  renderComparisonText,
} from '../../coordinator/compare/render.js';
import { comparisonWithPrevious } from '../../coordinator/compare/with-previous.js';
import type { Fleet } from '../../coordinator/fleet.js';
import { readRunFile } from '../../coordinator/report/run-file.js';
import { EXIT_REGRESSED } from '../exit-codes.js';
import type { ArgsOf } from './args.js';
import { fleetOf, redisArgs, redisUrlFrom } from './redis-args.js';
import { writeRenderedFiles } from './report-files.js';
import { printableJsonText } from '../../common/printable.js';

const options = (y: Argv) =>
  redisArgs(y)
    .positional('before', {
      type: 'string',
      describe: 'the earlier run: a run JSON (run --json), or with --redis a stored run id',
    })
    .positional('after', { type: 'string', describe: 'the later run, the same way' })
    .option('previous', {
      type: 'boolean',
      describe:
        'with --redis: compare one stored run (the newest when none is named) with the previous run of its plan',
    })
    .option('fail-on', {
      type: 'string',
      describe:
        '"regression": exit 3 when a quantity regressed or a warning or critical finding appeared; "N%": only for regressions of at least N% (findings still count)',
    })
    .option('json', {
      type: 'string',
      describe: 'write the comparison (probefleet.compare/v1) to this file (- for stdout)',
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

async function storedRun(fleet: Fleet, id: string): Promise<RunReport> {
  const report = await fleet.store.get(id);
  if (!report)
    throw new BadArgumentError(
      `no stored run "${id}" (see: probefleet runs list; reports expire after the coordinator's retention)`,
    );
  return report;
}

async function comparisonAsked(args: ArgsOf<typeof options>): Promise<RunComparison> {
  const useRedis = redisUrlFrom(args) !== undefined;
  if (args.previous) {
    if (!useRedis) throw new BadArgumentError('--previous reads stored runs: give --redis URL (or set REDIS_URL)');
    if (args.after) throw new BadArgumentError('--previous takes one run id (or none for the newest stored run)');
  } else if (!args.before || !args.after) {
    throw new BadArgumentError('compare needs two runs: BEFORE and AFTER (or --redis --previous [RUN])');
  }
  if (!useRedis) {
    const [before, after] = await Promise.all([readRunFile(args.before!), readRunFile(args.after!)]);
    return compareRuns(before, after, { before: args.before!, after: args.after! });
  }
  const fleet = fleetOf(args, createLogger('compare', process.env.PROBEFLEET_LOG_LEVEL ?? 'warn'));
  try {
    if (!args.previous) return compareRuns(await storedRun(fleet, args.before!), await storedRun(fleet, args.after!));
    const id = args.before ?? (await fleet.store.list(1))[0]?.runId;
    if (!id) throw new BadArgumentError('no stored runs (see: probefleet runs list)');
    const report = await storedRun(fleet, id);
    const comparison = await comparisonWithPrevious(fleet.store, report);
    if (!comparison)
      throw new BadArgumentError(
        `run "${id}" is the first stored run of plan ${report.plan.name}: nothing to compare with`,
      );
    return comparison;
  } finally {
    await fleet.close();
  }
}

export const compareCommand: CommandModule<object, ArgsOf<typeof options>> = {
  command: 'compare [before] [after]',
  describe:
    'What changed between two runs: each quantity before and after, the change with its 95% interval, a verdict; findings that appeared or disappeared',
  builder: options,
  handler: async (args) => {
    const failOn = args.failOn === undefined ? undefined : parseFailOn(args.failOn);
    const comparison = await comparisonAsked(args);
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
