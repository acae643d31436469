// Targets from files (coordinator/target-files.ts): what a file_sd list in JSON or YAML becomes in
// the plan as run (URLs, names, labels, the entry's settings), that the same list in either format
// becomes the same targets, that a schedule reads its files again at each firing, and the limits
// the fixtures cannot hold (10,001 targets, a file over 4 MiB). Each bad input's exact message is
// in the corpus of bad plans (test/fixtures/plans/bad/target-*.yaml, plan-validation.test.ts).
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { NAME_PATTERN } from '../../contracts/common.js';
import { LAB_ROLES } from '../../contracts/lab-roles.js';
import { TARGET_FILE_LIMITS } from '../../contracts/limits.js';
import { LABEL_VALUES, PUSH_GROUPS } from '../../contracts/metric-names.js';
import { SCHEDULED_RUN_SCHEMA, scheduledRunDataSchema } from '../../contracts/run-job.js';
import { RESERVED_LABELS } from '../../contracts/target-labels.js';
import { jsonErrorOffset } from '../../common/json-error-offset.js';
import { withLabTargets } from '../../coordinator/lab-targets.js';
import { formatProblem, loadPlanFile, PlanError } from '../../coordinator/plan-loader.js';
import { planOfFiring, ScheduleError } from '../../coordinator/schedules.js';
import { countJobs, splitPlan } from '../../coordinator/split.js';
import { targetNameFor } from '../../coordinator/target-files.js';
import { propertyParams } from '../helpers/property-runs.js';
import { tempDir } from '../helpers/temp-dir.js';

/** Writes files into a fresh folder (paths relative to it) and returns the folder. */
async function folderWith(files: Record<string, string>): Promise<string> {
  const dir = tempDir('probefleet-targetfiles-');
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), text);
  }
  return dir;
}

/** The loader's problems, as `plan validate` prints them. */
async function problemsOf(file: string): Promise<string[]> {
  const err = await loadPlanFile(file).then(
    () => assert.fail('accepted'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof PlanError, String(err));
  return err.problems.map(formatProblem);
}

const PLAN = `
name: files
targetLabels: [team, service]
targets:
  - { name: own, url: "http://127.0.0.1:18170/own", labels: { team: core } }
targetFiles:
  - name: services
    files: [sd/*.json]
    scheme: https
    path: /health
    headers: { accept: application/json }
    tls: { insecure: true }
    labels: { team: platform }
  - files: [sd/web.yaml]
experiments:
  - { probe: reuse, modes: [reused], requests: 1 }
  - { probe: tls, targets: [services], samples: 1, versions: ["1.3"] }
`;

const SERVICES = JSON.stringify([
  {
    targets: ['api.internal:8443', 'https://pay.internal/ready?deep=1'],
    labels: { team: 'payments', service: 'api', __meta_source: 'consul' },
  },
  { targets: ['search.internal'], labels: { service: 'search' } },
]);

describe('targets from files', () => {
  test('a file_sd list becomes targets: URLs, names from them, labels over the entry labels, the entry settings', async () => {
    const dir = await folderWith({
      'plan.yaml': PLAN,
      'sd/b-services.json': SERVICES,
      'sd/a-empty.json': '[]',
      'sd/web.yaml': '- targets: ["lab:keepalive/?n=1", "10.0.0.5:8080"]\n  labels: { service: web }\n',
    });
    const loaded = await loadPlanFile(path.join(dir, 'plan.yaml'));
    const targets = loaded.plan.targets.map(({ name, url, labels, file, group, tls, headers }) => ({
      name,
      url,
      labels,
      file,
      group,
      tls,
      headers,
    }));
    const services = { file: 'sd/b-services.json', group: 'services', headers: { accept: 'application/json' } };
    const tls = { insecure: true };
    assert.deepEqual(targets, [
      {
        name: 'own',
        url: 'http://127.0.0.1:18170/own',
        labels: { team: 'core' },
        file: undefined,
        group: undefined,
        tls: undefined,
        headers: undefined,
      },
      {
        name: 'api-internal-8443-health',
        url: 'https://api.internal:8443/health',
        labels: { team: 'payments', service: 'api' },
        tls,
        ...services,
      },
      {
        name: 'pay-internal-443-ready-deep-1',
        url: 'https://pay.internal/ready?deep=1',
        labels: { team: 'payments', service: 'api' },
        tls,
        ...services,
      },
      {
        name: 'search-internal-443-health',
        url: 'https://search.internal/health',
        labels: { team: 'platform', service: 'search' },
        tls,
        ...services,
      },
      {
        name: 'lab-keepalive-n-1',
        url: 'lab:keepalive/?n=1',
        labels: { service: 'web' },
        file: 'sd/web.yaml',
        group: undefined,
        tls: undefined,
        headers: undefined,
      },
      {
        name: '10-0-0-5-8080',
        url: 'http://10.0.0.5:8080/',
        labels: { service: 'web' },
        file: 'sd/web.yaml',
        group: undefined,
        tls: undefined,
        headers: undefined,
      },
    ]);
    // The entry's TLS settings travel with its https targets; the tls experiment names the entry.
    assert.deepEqual(loaded.tls['api-internal-8443-health'], { insecure: true });
    assert.equal(countJobs(loaded.plan).total, 6 + 3);
    const atLab = withLabTargets(loaded, { host: '127.0.0.1', ports: { ...portsAt(30000) } }, '');
    const jobs = splitPlan(atLab, 'run-1');
    assert.deepEqual(
      jobs.filter((j) => j.probe === 'tls').map((j) => j.target.name),
      ['api-internal-8443-health', 'pay-internal-443-ready-deep-1', 'search-internal-443-health'],
    );
    const lab = jobs.find((j) => j.target.name === 'lab-keepalive-n-1')!;
    assert.equal(lab.target.url, 'http://127.0.0.1:30000/?n=1');
    assert.deepEqual(lab.target.labels, { service: 'web' });
    assert.equal(lab.jobId, 'run-1.local.lab-keepalive-n-1.reuse-reused-http-ceb7090f36', 'labels are not in job ids');
  });

  test('the same list in JSON and in YAML makes the same targets (property)', async () => {
    const hosts = fc.constantFrom('api.internal', '10.0.0.7', 'db-1.example.com', '[::1]');
    const entry = fc.record({
      targets: fc.uniqueArray(
        fc.tuple(hosts, fc.integer({ min: 1, max: 65_535 })).map(([h, p]) => `${h}:${p}`),
        { minLength: 1, maxLength: 4 },
      ),
      labels: fc.record({ team: fc.constantFrom('a', 'b', 'payments', 'search') }, { requiredKeys: [] }),
    });
    const dir = tempDir('probefleet-targetfiles-');
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(entry, { minLength: 1, maxLength: 5 }), async (entries) => {
        // The same URL in two entries is a mistake of its own (the corpus has it): one entry per URL here.
        const seen = new Set<string>();
        const list = entries
          .map((e) => ({ ...e, targets: e.targets.filter((t) => !seen.has(t) && seen.add(t)) }))
          .filter((e) => e.targets.length > 0);
        const sub = path.join(dir, String(n++));
        await mkdir(sub);
        await writeFile(path.join(sub, 'list.json'), JSON.stringify(list));
        await writeFile(path.join(sub, 'list.yaml'), stringify(list));
        const planOf = async (file: string) => {
          await writeFile(
            path.join(sub, 'plan.yaml'),
            `name: p\ntargetLabels: [team]\ntargetFiles: [{ files: [${file}] }]\nexperiments: [{ probe: reuse }]\n`,
          );
          return (await loadPlanFile(path.join(sub, 'plan.yaml'))).plan.targets.map(({ file: _, ...t }) => t);
        };
        const [json, yaml] = [await planOf('list.json'), await planOf('list.yaml')];
        assert.deepEqual(json, yaml);
        assert.equal(json.length, seen.size);
        for (const t of json) assert.match(t.name, NAME_PATTERN);
      }),
      propertyParams(40),
    );
  });

  test('names from URLs are valid, stable, and keep a hash when they would be too long (property)', () => {
    const word = fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,20}$/);
    const url = fc
      .record({
        scheme: fc.constantFrom('http', 'https'),
        host: fc.array(word, { minLength: 1, maxLength: 4 }).map((w) => w.join('.')),
        port: fc.option(fc.integer({ min: 1, max: 65_535 }), { nil: undefined }),
        path: fc.array(fc.stringMatching(/^[A-Za-z0-9._~-]{0,30}$/), { maxLength: 5 }).map((p) => `/${p.join('/')}`),
      })
      .map(({ scheme, host, port, path: p }) => `${scheme}://${host}${port ? `:${port}` : ''}${p}`);
    fc.assert(
      fc.property(url, (u) => {
        const name = targetNameFor(u);
        assert.match(name, NAME_PATTERN, u);
        assert.equal(targetNameFor(u), name);
        if (name.length === 63 || /-[0-9a-f]{8}$/.test(name)) assert.ok(name.length <= 63);
      }),
      propertyParams(),
    );
    assert.equal(targetNameFor('https://api.example.com/health'), 'api-example-com-443-health');
    assert.equal(
      targetNameFor('http://robot:secret@api.example.com:8080/?token=abc&page=2'),
      'api-example-com-8080-token-redacted-page-2',
    );
    const long = `https://a.example/${'x'.repeat(80)}`;
    assert.match(targetNameFor(long), /^a-example-443-x{40}-[0-9a-f]{8}$/);
    assert.notEqual(targetNameFor(long), targetNameFor(`${long}y`));
  });

  test('JSON syntax errors are placed where JSON.parse stops, for any text (property)', () => {
    const value = fc.json({ maxDepth: 3 });
    const mangled = fc
      .tuple(value, fc.nat(), fc.constantFrom('', ',', ']', '}', '"', ' ', 'x', '['))
      .map(([text, at, insert]) => {
        const i = at % (text.length + 1);
        return text.slice(0, i) + insert + text.slice(i + (insert === '' ? 1 : 0));
      });
    fc.assert(
      fc.property(fc.oneof(value, mangled), (text) => {
        let parses = true;
        try {
          JSON.parse(text);
        } catch {
          parses = false;
        }
        assert.equal(jsonErrorOffset(text) === undefined, parses, text);
      }),
      propertyParams(),
    );
    assert.equal(jsonErrorOffset('[{"targets": ["a:1",]}]'), 20);
    assert.equal(jsonErrorOffset(`${'['.repeat(1_000_000)}`), 1_000_000, 'deep nesting is a loop, not recursion');
  });

  test('a schedule reads its target files again each time it fires', async () => {
    const dir = await folderWith({
      'plan.yaml':
        'name: nightly\ntargetLabels: [team]\ntargetFiles: [{ files: [sd.json], tls: { insecure: true } }]\nexperiments: [{ probe: reuse }]\n',
      'sd.json': JSON.stringify([{ targets: ['https://a.internal/'], labels: { team: 'x' } }]),
    });
    const loaded = await loadPlanFile(path.join(dir, 'plan.yaml'));
    const data = scheduledRunDataSchema.parse({
      schema: SCHEDULED_RUN_SCHEMA,
      plan: loaded.plan,
      tls: {},
      targetFiles: loaded.targetFiles,
    });
    assert.deepEqual(
      (await planOfFiring(data)).plan.targets.map((t) => [t.name, t.labels]),
      [['a-internal-443', { team: 'x' }]],
    );
    await writeFile(
      path.join(dir, 'sd.json'),
      JSON.stringify([{ targets: ['https://a.internal/', 'https://b.internal/'], labels: { team: 'y' } }]),
    );
    const fired = await planOfFiring(data);
    assert.deepEqual(
      fired.plan.targets.map((t) => [t.name, t.labels]),
      [
        ['a-internal-443', { team: 'y' }],
        ['b-internal-443', { team: 'y' }],
      ],
    );
    assert.deepEqual(fired.tls['b-internal-443'], { insecure: true });
    // A file broken by then fails the firing with its problems; nothing is run.
    await writeFile(path.join(dir, 'sd.json'), '[{"targets": ["https://c.internal/"], "labels": {"tema": "z"}}]');
    await assert.rejects(
      planOfFiring(data),
      (err: Error) =>
        err instanceof ScheduleError &&
        err.message.includes(
          'schedule nightly: its target files as they are now hold 1 problem; nothing was submitted',
        ) &&
        /sd\.json:1:50: \[0\]\.labels\.tema: label "tema" is not in targetLabels \(team\)/.test(err.message),
    );
  });

  test(`more than ${TARGET_FILE_LIMITS.targets.toLocaleString('en-US')} targets from files, or a file over ${TARGET_FILE_LIMITS.fileBytes / 1024 / 1024} MiB, is refused naming the limit`, async () => {
    const targets = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => `10.0.${(from + i) >> 8}.${(from + i) & 255}:80`);
    const dir = await folderWith({
      'plan.yaml':
        'name: big\ntargetFiles: [{ files: [a.json, b.json] }]\nexperiments: [{ probe: reuse, modes: [reused] }]\n',
      'a.json': JSON.stringify([{ targets: targets(0, 6_000) }]),
      'b.json': JSON.stringify([{ targets: targets(6_000, 4_001) }]),
      'huge.yaml': `${'#'.repeat(TARGET_FILE_LIMITS.fileBytes)}\n[]\n`,
      'huge-plan.yaml': 'name: huge\ntargetFiles: [{ files: [huge.yaml] }]\nexperiments: [{ probe: reuse }]\n',
    });
    const [many, ...more] = await problemsOf(path.join(dir, 'plan.yaml'));
    assert.deepEqual(more, []);
    assert.match(
      many,
      /b\.json:1:\d+: \[0\]\.targets\[4000\]: more than 10,000 targets from the plan's files \(the limit, contracts\/limits\.ts TARGET_FILE_LIMITS\)$/,
    );
    const [huge] = await problemsOf(path.join(dir, 'huge-plan.yaml'));
    assert.match(
      huge,
      /huge-plan\.yaml:2:25: targetFiles\[0\]\.files\[0\]: cannot read target file .*huge\.yaml: 4,194,308 bytes, over the limit of 4,194,304 bytes$/,
    );
  });

  test('target labels may not be any label probefleet puts on its own series', () => {
    const own = [...Object.keys(LABEL_VALUES), ...Object.values(PUSH_GROUPS).flatMap((g) => g.key), 'job', 'le'];
    for (const label of own) assert.ok((RESERVED_LABELS as readonly string[]).includes(label), label);
  });
});

/** Every lab role at consecutive ports from `first`. */
function portsAt(first: number): Record<keyof typeof LAB_ROLES, number> {
  return Object.fromEntries(Object.keys(LAB_ROLES).map((role, i) => [role, first + i])) as Record<
    keyof typeof LAB_ROLES,
    number
  >;
}
