import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { REPO_ROOT, runCli } from '../helpers/repo.js';

// One fixture per validation rule, with the exact message `plan validate` prints (exit 2).
const EXPECTED: Record<string, string[]> = {
  'invalid-absurd-count.yaml': ['7:15: experiments[0].requests: must be at most 10000 (got 1000000)'],
  'invalid-bad-cron.yaml': ['8:9: schedule.cron: invalid cron expression "0 25 * * *": Constraint error, got value 25 expected range 0-23'],
  'invalid-bad-header-name.yaml': ['6:16: targets[0].headers["x bad"]: not a valid header name: "x bad"'],
  'invalid-bad-name.yaml': ['1:7: name: must be 1-63 characters of a-z, 0-9, "-" or "_", starting with a letter or digit'],
  'invalid-bad-timeout.yaml': ['2:20: jobTimeoutSeconds: must be at least 1 (got 0)'],
  'invalid-bad-timezone.yaml': ['9:7: schedule.tz: unknown time zone "Mars/Olympus"'],
  'invalid-cron-fields.yaml': ['8:9: schedule.cron: cron needs 5 fields (minute hour day month weekday): "every night"'],
  'invalid-duplicate-key.yaml': ['2:1: YAML: Map keys must be unique'],
  'invalid-duplicate-region.yaml': ['2:30: regions[2]: duplicate region "eu-west"'],
  'invalid-duplicate-target.yaml': ['5:11: targets[1].name: duplicate target name "api"'],
  'invalid-invalid-url.yaml': ['4:10: targets[0].url: not a valid URL: "http//127.0.0.1:18170/"'],
  'invalid-missing-ca-file.yaml': ['6:11: targets[0].tls.ca: cannot read CA file test/fixtures/plans/no-such-ca.pem: ENOENT'],
  'invalid-missing-name.yaml': ['1:1: name: is required'],
  'invalid-missing-probe.yaml': ['6:5: experiments[0].probe: is required (one of reuse, load)'],
  'invalid-negative-count.yaml': ['7:15: experiments[0].requests: must be at least 1 (got -5)'],
  'invalid-no-experiments.yaml': ['5:14: experiments: needs at least 1 item'],
  'invalid-no-targets.yaml': ['2:10: targets: needs at least 1 item'],
  'invalid-not-a-mapping.yaml': ['1:1: a plan is a YAML mapping (name, targets, experiments, ...)'],
  'invalid-tls-on-http.yaml': ['6:7: targets[0].tls: tls settings apply to https:// targets only'],
  'invalid-unknown-experiment-target.yaml': ['7:20: experiments[0].targets[1]: unknown target "web" (targets: api)'],
  'invalid-unknown-key.yaml': ['7:1: retries: unknown field "retries"'],
  'invalid-unknown-mode.yaml': ['7:21: experiments[0].modes[1]: must be one of "reused", "new", "cold" (got "sometimes")'],
  'invalid-unknown-probe.yaml': ['6:12: experiments[0].probe: unknown probe "ping" (known probes: reuse, load)'],
  'invalid-unknown-target-key.yaml': ['3:5: targets[0].url: is required', '4:5: targets[0].ulr: unknown field "ulr"'],
  'invalid-unsupported-scheme.yaml': ['4:10: targets[0].url: unsupported URL scheme "ftp:" (use http:// or https://)'],
  'invalid-url-credentials.yaml': ['4:10: targets[0].url: credentials in the URL are not allowed (use headers)'],
  'invalid-wrong-type.yaml': ['7:15: experiments[0].requests: expected number, got "many"'],
  'invalid-yaml-syntax.yaml': [
    '4:10: YAML: Nested mappings are not allowed in compact mappings',
    '4:10: YAML: Implicit keys need to be on a single line',
  ],
};

const FIXTURES = 'test/fixtures/plans';

describe('plan validation', () => {
  test('every invalid fixture has an expected message, and every expectation a fixture', async () => {
    const files = (await readdir(path.join(REPO_ROOT, FIXTURES))).filter((f) => f.startsWith('invalid-'));
    assert.deepEqual(files.sort(), Object.keys(EXPECTED).sort());
  });

  for (const [fixture, lines] of Object.entries(EXPECTED)) {
    test(`${fixture} is refused with file, line, column and field, exit 2`, async () => {
      const file = `${FIXTURES}/${fixture}`;
      const { code, stdout, stderr } = await runCli(['plan', 'validate', file]);
      assert.equal(code, 2);
      assert.equal(stdout, '');
      assert.equal(stderr, lines.map((line) => `${file}:${line}\n`).join(''));
    });
  }

  test('plan expand refuses an invalid plan the same way', async () => {
    const { code, stderr } = await runCli(['plan', 'expand', `${FIXTURES}/invalid-unknown-probe.yaml`]);
    assert.equal(code, 2);
    assert.match(stderr, /experiments\[0\]\.probe: unknown probe "ping"/);
  });

  test('a missing plan file is an error naming the file', async () => {
    const { code, stderr } = await runCli(['plan', 'validate', 'no/such/plan.yaml']);
    assert.equal(code, 2);
    assert.match(stderr, /^no\/such\/plan\.yaml:1:1: cannot read plan: ENOENT/);
  });

  test('every example plan is valid', async () => {
    const examples = (await readdir(path.join(REPO_ROOT, 'examples'))).filter((f) => f.endsWith('.yaml'));
    assert.ok(examples.length > 0);
    for (const example of examples) {
      const { code, stdout, stderr } = await runCli(['plan', 'validate', `examples/${example}`]);
      assert.equal(code, 0, `${example}: ${stderr}`);
      assert.match(stdout, /is valid/);
    }
  });
});
