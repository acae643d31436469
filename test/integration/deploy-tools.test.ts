// The deployment's configurations checked by the tools that read them: promtool (the compose
// stack's and the Kubernetes Prometheus configurations, with their rule files where they are
// mounted), amtool (the Alertmanager configuration), and `kubectl kustomize` against the render
// of test/helpers/deploy.ts where kubectl is installed.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { parseAllDocuments, stringify } from 'yaml';
import {
  hostPathOf,
  isObject,
  K8S_DIR,
  loadCompose,
  readYaml,
  renderKustomization,
  type Manifest,
  type Yaml,
} from '../helpers/deploy.js';
import { needsPrometheus, onPath, PROMETHEUS_BINARIES, requirePrometheus } from '../helpers/prometheus.js';
import { REPO_ROOT } from '../helpers/repo.js';
import { ALERTS } from '../../dashboards/src/alerts.js';
import { tempDir } from '../helpers/temp-dir.js';

const compose = loadCompose();
let dir: string;
before(async () => {
  dir = tempDir('probefleet-deploy-');
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function run(
  command: string,
  args: string[],
  cwd = REPO_ROOT,
): Promise<{ code: number; output: string; stdout: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, timeout: 60_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, output: stdout + stderr, stdout }),
    );
  });
}

/** A copy of a Prometheus configuration whose rule files point at the repository's files. */
async function withRulesFrom(
  config: Yaml,
  hostPath: (rules: string) => string | undefined,
  name: string,
): Promise<string> {
  const rules = (config.rule_files as string[]).map((r) => {
    const file = hostPath(r);
    assert.ok(file, `${name}: no host file for rule file ${r}`);
    return file;
  });
  const file = path.join(dir, name);
  await writeFile(file, stringify({ ...config, rule_files: rules }));
  return file;
}

test(
  "promtool check config: the compose stack's Prometheus, its rules read through the mounts",
  needsPrometheus,
  async () => {
    requirePrometheus();
    const prometheus = compose.get('prometheus')!;
    const config = readYaml(hostPathOf(prometheus, '/etc/prometheus/prometheus.yml')!) as Yaml;
    const file = await withRulesFrom(config, (r) => hostPathOf(prometheus, r), 'compose-prometheus.yml');
    const { code, output } = await run(PROMETHEUS_BINARIES.promtool, ['check', 'config', file]);
    assert.equal(code, 0, output);
    assert.match(output, new RegExp(`SUCCESS: ${ALERTS.length} rules found`));
  },
);

test(
  "promtool check config: the Kubernetes fleet's central Prometheus (with the repository's rules) and the regions' agents",
  needsPrometheus,
  async () => {
    requirePrometheus();
    const rules = path.join(REPO_ROOT, 'dashboards/alerts/probefleet.rules.yml');
    const configs = readdirSync(path.join(K8S_DIR, 'prometheus'));
    assert.deepEqual(configs.sort(), ['prometheus.yml', 'region-agent.yml']);
    for (const name of configs) {
      const config = readYaml(path.join(K8S_DIR, 'prometheus', name)) as Yaml;
      const agent = name.includes('agent');
      const file = agent
        ? path.join(K8S_DIR, 'prometheus', name)
        : await withRulesFrom(
            config,
            (r) => (path.basename(r) === path.basename(rules) ? rules : undefined),
            `k8s-${name}`,
          );
      const { code, output } = await run(PROMETHEUS_BINARIES.promtool, [
        'check',
        'config',
        ...(agent ? ['--agent'] : []),
        file,
      ]);
      assert.equal(code, 0, `${name}: ${output}`);
      if (!agent) assert.match(output, new RegExp(`SUCCESS: ${ALERTS.length} rules found`));
    }
  },
);

const amtoolMissing = onPath('amtool')
  ? false
  : "amtool not found: run `bash test/services/ensure.sh` as root (installs Debian's prometheus-alertmanager)";
test('amtool check-config: the Alertmanager configuration the stack mounts', {
  skip: process.env.CI === 'true' ? false : amtoolMissing,
}, async () => {
  assert.ok(!amtoolMissing, amtoolMissing || '');
  const file = hostPathOf(compose.get('alertmanager')!, '/etc/alertmanager/alertmanager.yml')!;
  const { code, output } = await run('amtool', ['check-config', file]);
  assert.equal(code, 0, output);
  assert.match(output, /SUCCESS/);
});

// kubectl is not a Debian package here (and Debian's kubernetes-client is too old for `patches`),
// so the test command cannot install it: without it this comparison is skipped, in CI too, and
// test/unit/deploy-k8s.test.ts still renders every overlay.
const kubectlMissing = onPath('kubectl')
  ? false
  : 'kubectl not found: the overlays are rendered by test/helpers/deploy.ts only';
test("kubectl kustomize renders every kustomization as the test's render does (up to the ConfigMap hash)", {
  skip: kubectlMissing,
}, async () => {
  const kustomizations = [
    ...readdirSync(path.join(K8S_DIR, 'overlays')).map((d) => path.join(K8S_DIR, 'overlays', d)),
    path.join(K8S_DIR, 'monitoring'),
  ];
  for (const kustomization of kustomizations) {
    const { code, output, stdout } = await run('kubectl', ['kustomize', kustomization]);
    assert.equal(code, 0, output);
    const ours = renderKustomization(kustomization);
    const hashed = new RegExp(`\\b(${ours.generated.join('|') || '(?!)'})-[a-z0-9]{10}\\b`, 'g');
    const normalize = (manifests: Manifest[]) =>
      Object.fromEntries(
        manifests.map((m) => [
          `${m.kind}/${m.metadata.name.replace(hashed, '$1-HASH')}`,
          JSON.parse(JSON.stringify(m).replace(hashed, '$1-HASH')) as unknown,
        ]),
      );
    const theirs = parseAllDocuments(stdout)
      .map((d) => d.toJS() as unknown)
      .filter(isObject) as Manifest[];
    assert.deepEqual(normalize(ours.manifests), normalize(theirs), path.relative(K8S_DIR, kustomization));
  }
});
