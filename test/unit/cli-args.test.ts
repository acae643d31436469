// The command line's own conventions: "-" as stdout after a file option, and the waits that
// `run --help` and the README state, which must be the ones the code uses.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { withStdoutDashesJoined } from '../../cli/options/args.js';
import { RUN_END_SLACK_SECONDS } from '../../coordinator/distributed-run.js';
import { DEADLINE_SLACK_SECONDS } from '../../coordinator/flow.js';
import { REPO_ROOT, runCli } from '../helpers/repo.js';

test('a lone "-" after a file option is that option\'s value (stdout); anywhere else it stays an argument', () => {
  const cases: [string[], string[]][] = [
    [
      ['report', 'run.json', '--markdown', '-'],
      ['report', 'run.json', '--markdown=-'],
    ],
    [
      ['run', 'p.yaml', '--json', '-', '--csv', '-'],
      ['run', 'p.yaml', '--json=-', '--csv=-'],
    ],
    [
      ['report', 'run.json', '--markdown=-'],
      ['report', 'run.json', '--markdown=-'],
    ],
    [
      ['report', 'run.json', '--html', 'out.html'],
      ['report', 'run.json', '--html', 'out.html'],
    ],
    [
      ['compare', '-', 'b.json'],
      ['compare', '-', 'b.json'],
    ],
    [
      ['run', 'p.yaml', '--regions', '-'],
      ['run', 'p.yaml', '--regions', '-'],
    ],
    [
      ['report', 'run.json', '--csv'],
      ['report', 'run.json', '--csv'],
    ],
  ];
  for (const [given, expected] of cases) assert.deepEqual(withStdoutDashesJoined(given), expected, given.join(' '));
});

test("run --help and the README give the wait the code uses: the deadline's slack and the run's end after it", async () => {
  const { code, stdout } = await runCli(['run', '--help']);
  assert.equal(code, 0);
  const help = stdout.replace(/\s+/g, ' ');
  assert.match(help, new RegExp(`jobs per region x jobTimeoutSeconds \\+ ${DEADLINE_SLACK_SECONDS}\\)`));
  assert.match(help, new RegExp(`waits at most until then \\+ jobTimeoutSeconds \\+ ${RUN_END_SLACK_SECONDS},`));
  const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
  assert.match(readme, new RegExp(`the deadline \\+ \`jobTimeoutSeconds\` \\+ ${RUN_END_SLACK_SECONDS} s`));
});

test('a log level the environment names that pino has not is bad input at once, whatever the command', async () => {
  // Before anything logs: `schedule list` against a Redis that is not there would log first from
  // a connection's error event, where a throw is no exit 2.
  const { code, stdout, stderr } = await runCli(
    ['schedule', 'list', '--redis', 'redis://127.0.0.1:9', '--redis-timeout', '1'],
    {
      env: { PROBEFLEET_LOG_LEVEL: 'bogus' },
    },
  );
  assert.equal(code, 2, stderr);
  assert.equal(stdout, '');
  assert.match(
    stderr,
    /^PROBEFLEET_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent \(got "bogus"\)\n$/,
  );
});
