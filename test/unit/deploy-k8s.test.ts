// deploy/k8s: every manifest parses, every overlay renders (with the small kustomize of
// test/helpers/deploy.ts; test/integration/deploy-tools.test.ts compares it with `kubectl
// kustomize`), the rendered workers carry their region, and the pods get what the code reads.
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { loadPlanFile } from '../../coordinator/plan-loader.js';
import {
  codeEnvVars,
  containersOf,
  isObject,
  K8S_DIR,
  optionValues,
  podSpecs,
  readManifests,
  readYaml,
  renderKustomization,
  type Manifest,
  type Yaml,
} from '../helpers/deploy.js';

const OVERLAYS_DIR = path.join(K8S_DIR, 'overlays');
const overlays = readdirSync(OVERLAYS_DIR).filter((d) => statSync(path.join(OVERLAYS_DIR, d)).isDirectory());
const rendered = new Map(
  overlays.map((region) => [region, renderKustomization(path.join(OVERLAYS_DIR, region)).manifests]),
);
/** Files that are not Kubernetes objects: kustomizations, plans, the Prometheus configuration. */
const NOT_MANIFESTS = /(^|\/)(kustomization\.yaml|plans\/.*|prometheus\/.*)$/;

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? yamlFiles(path.join(dir, e.name)) : /\.ya?ml$/.test(e.name) ? [path.join(dir, e.name)] : [],
  );
}

const find = (manifests: Manifest[], kind: string, name: string) =>
  manifests.find((m) => m.kind === kind && m.metadata.name === name);
const matches = (selector: Yaml, labels: Yaml) => Object.entries(selector).every(([k, v]) => labels[k] === v);
const probefleetContainers = (manifests: Manifest[]) =>
  podSpecs(manifests).flatMap(({ owner, spec }) =>
    containersOf(spec)
      .filter((c) => String(c.image).startsWith('probefleet'))
      .map((c) => ({ owner, container: c })),
  );

test('every file under deploy/k8s parses; the objects have apiVersion, kind and a name', () => {
  const files = yamlFiles(K8S_DIR);
  let objects = 0;
  for (const file of files) {
    const relative = path.relative(K8S_DIR, file);
    if (NOT_MANIFESTS.test(relative)) assert.ok(readYaml(file) !== null, relative);
    else objects += readManifests(file).length;
  }
  assert.ok(objects >= 10, `${objects} objects`);
});

test("one overlay per region; each renders, and its workers take that region's jobs on that region's nodes", () => {
  assert.deepEqual([...overlays].sort(), ['ap-south', 'eu-west', 'us-east']);
  for (const [region, manifests] of rendered) {
    const workers = manifests.filter((m) => m.kind === 'StatefulSet' && m.metadata.name === 'probefleet-worker');
    assert.equal(workers.length, 1, region);
    const [{ spec }] = podSpecs(workers);
    const worker = (spec!.containers as Yaml[]).find((c) => c.name === 'worker')!;
    const args = worker.args as string[];
    assert.equal(args[0], 'worker');
    assert.deepEqual(optionValues(args, '--region'), [region], `${region}: --region`);
    assert.deepEqual(optionValues(args, '--metrics-host'), ['0.0.0.0'], `${region}: /metrics reachable by Prometheus`);
    const nodeSelector = spec!.nodeSelector as Yaml;
    assert.ok(
      isObject(nodeSelector) && typeof nodeSelector['topology.kubernetes.io/region'] === 'string',
      `${region}: node selector`,
    );
    const grace = Number(optionValues(args, '--shutdown-grace-seconds')[0] ?? 30);
    assert.ok(Number(spec!.terminationGracePeriodSeconds) > grace, `${region}: SIGKILL only after the drain`);
  }
  const selectors = [...rendered.values()].map(
    (m) =>
      (podSpecs(m.filter((x) => x.kind === 'StatefulSet'))[0]!.spec.nodeSelector as Yaml)[
        'topology.kubernetes.io/region'
      ],
  );
  assert.equal(new Set(selectors).size, overlays.length, 'each overlay its own region');
});

test('exactly one overlay runs the coordinator, for every region, with the plans of those regions', async () => {
  const withCoordinator = [...rendered].filter(([, m]) => find(m, 'Deployment', 'probefleet-coordinator'));
  assert.equal(withCoordinator.length, 1, 'one coordinator per fleet');
  const [, manifests] = withCoordinator[0]!;
  const deployment = find(manifests, 'Deployment', 'probefleet-coordinator')!;
  assert.equal(((deployment.spec as Yaml).strategy as Yaml).type, 'Recreate');
  const [{ spec }] = podSpecs([deployment]);
  const coordinator = (spec!.containers as Yaml[]).find((c) => c.name === 'coordinator')!;
  assert.deepEqual(optionValues(coordinator.args as string[], '--region').sort(), [...overlays].sort());
  assert.deepEqual(optionValues(coordinator.args as string[], '--host'), ['0.0.0.0']);

  // The schedule is registered from the plans ConfigMap, by its generated (hashed) name.
  const [init] = spec!.initContainers as Yaml[];
  const initArgs = init!.args as string[];
  assert.deepEqual(initArgs.slice(0, 2), ['schedule', 'add']);
  const mount = (init!.volumeMounts as Yaml[]).find((m) => initArgs[2]!.startsWith(`${String(m.mountPath)}/`))!;
  const volume = (spec!.volumes as Yaml[]).find((v) => v.name === mount.name)!;
  const configMap = find(manifests, 'ConfigMap', String((volume.configMap as Yaml).name));
  assert.ok(configMap, `ConfigMap ${String((volume.configMap as Yaml).name)} is rendered`);
  const key = path.basename(initArgs[2]!);
  assert.ok(key in (configMap.data as Yaml), `${key} in the ConfigMap`);
  const { plan } = await loadPlanFile(path.join(K8S_DIR, 'coordinator/plans', key));
  assert.deepEqual([...plan.regions].sort(), [...overlays].sort(), 'the plan runs from every region that has workers');
  assert.ok(plan.schedule?.cron);
});

test("every probefleet container gets every environment variable the code reads (the health check's aside)", () => {
  // PROBEFLEET_HEALTH_URL is read by the Docker HEALTHCHECK only; Kubernetes uses its own probes.
  const vars = [...codeEnvVars()].filter(([name]) => name !== 'PROBEFLEET_HEALTH_URL');
  for (const [region, manifests] of rendered) {
    const containers = probefleetContainers(manifests);
    assert.ok(containers.length >= 1, region);
    for (const { owner, container } of containers) {
      const names = new Set((container.env as Yaml[]).map((e) => e.name));
      const missing = vars
        .filter(([name]) => !names.has(name))
        .map(([name, files]) => `${name} (read in ${files.join(', ')})`);
      assert.deepEqual(missing, [], `${region}: ${owner.metadata.name}/${String(container.name)}`);
      const jobKey = (container.env as Yaml[]).find((e) => e.name === 'PROBEFLEET_JOB_KEY');
      assert.ok(
        jobKey && isObject(jobKey.valueFrom) && 'secretKeyRef' in jobKey.valueFrom,
        'the job key comes from a Secret',
      );
    }
  }
});

test('Secret references name keys that secret.example.yaml documents', () => {
  const [secret] = readManifests(path.join(K8S_DIR, 'base/secret.example.yaml'));
  const keys = new Set(Object.keys(secret!.stringData as Yaml));
  for (const k of ['redis-url', 'pushgateway-url', 'job-key']) assert.ok(keys.has(k), k);
  for (const manifests of rendered.values()) {
    for (const { container } of probefleetContainers(manifests)) {
      for (const env of container.env as Yaml[]) {
        const ref = isObject(env.valueFrom) ? (env.valueFrom.secretKeyRef as Yaml | undefined) : undefined;
        if (!ref) continue;
        assert.equal(ref.name, secret!.metadata.name, String(env.name));
        assert.ok(keys.has(String(ref.key)), `${String(env.name)}: key ${String(ref.key)}`);
      }
    }
  }
});

test('selectors and named ports agree: Services, the PodDisruptionBudget, probes', () => {
  for (const [region, manifests] of rendered) {
    const pods = podSpecs(manifests);
    for (const m of manifests.filter((x) => x.kind === 'Service' || x.kind === 'PodDisruptionBudget')) {
      const selector = (
        m.kind === 'Service' ? (m.spec as Yaml).selector : ((m.spec as Yaml).selector as Yaml).matchLabels
      ) as Yaml;
      const selected = pods.filter((p) => matches(selector, p.labels));
      assert.equal(selected.length, 1, `${region}: ${m.kind}/${m.metadata.name} selects one workload`);
      const portNames = new Set(
        containersOf(selected[0]!.spec).flatMap((c) => ((c.ports as Yaml[] | undefined) ?? []).map((p) => p.name)),
      );
      for (const port of m.kind === 'Service' ? ((m.spec as Yaml).ports as Yaml[]) : [])
        assert.ok(portNames.has(port.targetPort), `${region}: ${m.metadata.name} port ${String(port.targetPort)}`);
    }
    for (const { owner, spec } of pods) {
      for (const c of containersOf(spec)) {
        const ports = new Set(((c.ports as Yaml[] | undefined) ?? []).map((p) => p.name));
        for (const probe of [c.readinessProbe, c.livenessProbe].filter(isObject))
          assert.ok(ports.has((probe.httpGet as Yaml).port), `${owner.metadata.name}: probe port`);
      }
    }
    for (const workload of manifests.filter(
      (m) => isObject(m.spec) && isObject(m.spec.selector) && isObject(m.spec.template),
    )) {
      const [pod] = podSpecs([workload]);
      assert.ok(
        matches(((workload.spec as Yaml).selector as Yaml).matchLabels as Yaml, pod!.labels),
        `${workload.metadata.name}: selector matches its pods`,
      );
    }
  }
});

test("monitoring: the monitors select the workloads' pods and ports; the Pushgateway is scraped with honor labels", () => {
  const monitors = renderKustomization(path.join(K8S_DIR, 'monitoring')).manifests;
  const eu = rendered.get('eu-west')!;
  const pods = podSpecs(eu);
  for (const monitor of monitors) {
    const selector = ((monitor.spec as Yaml).selector as Yaml).matchLabels as Yaml;
    const endpoints = ((monitor.spec as Yaml).endpoints ?? (monitor.spec as Yaml).podMetricsEndpoints) as Yaml[];
    if (selector['app.kubernetes.io/name'] === 'pushgateway') {
      assert.equal(endpoints[0]!.honorLabels, true);
      continue;
    }
    const pod = pods.find((p) => matches(selector, p.labels));
    if (monitor.kind === 'PodMonitor') {
      assert.ok(pod, `${monitor.metadata.name} selects pods`);
      const ports = containersOf(pod.spec).flatMap((c) => ((c.ports as Yaml[] | undefined) ?? []).map((p) => p.name));
      assert.ok(ports.includes(endpoints[0]!.port), `${monitor.metadata.name}: port ${String(endpoints[0]!.port)}`);
    } else {
      const service = eu.find((m) => m.kind === 'Service' && matches(selector, m.metadata.labels as Yaml));
      assert.ok(service, `${monitor.metadata.name} selects a Service`);
      assert.ok(((service.spec as Yaml).ports as Yaml[]).some((p) => p.name === endpoints[0]!.port));
    }
  }
  const prometheus = readYaml(path.join(K8S_DIR, 'prometheus/prometheus.yml')) as Yaml;
  const pushgateway = (prometheus.scrape_configs as Yaml[]).find((j) => j.job_name === 'pushgateway')!;
  assert.equal(pushgateway.honor_labels, true);
});

test('the in-cluster Redis (deploy/k8s/redis, for a fleet without a managed one) persists every write on a volume', () => {
  const { manifests } = renderKustomization(path.join(K8S_DIR, 'redis'));
  const redis = find(manifests, 'StatefulSet', 'probefleet-redis');
  assert.ok(redis, 'a StatefulSet probefleet-redis');
  const template = (redis.spec as Yaml).template as Yaml;
  const [container] = containersOf(template.spec as Yaml);
  assert.ok(container);
  assert.deepEqual(optionValues(container.args as string[], '--appendonly'), ['yes']);
  assert.deepEqual(optionValues(container.args as string[], '--dir'), ['/data']);
  const claims = (redis.spec as Yaml).volumeClaimTemplates as Yaml[];
  assert.ok(
    claims.some((c) => (c.metadata as Yaml).name === 'data') &&
      (container.volumeMounts as Yaml[]).some((m) => m.name === 'data' && m.mountPath === '/data'),
    'its data directory is a persistent volume',
  );
  const service = find(manifests, 'Service', 'probefleet-redis');
  assert.ok(service && matches((service.spec as Yaml).selector as Yaml, (template.metadata as Yaml).labels as Yaml));
});
