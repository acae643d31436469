// deploy/compose.yaml against the code and the files it mounts: no Docker engine needed (none
// runs here). test/integration/deploy-image.test.ts runs its command lines; this file checks that
// what it names exists and agrees with what the code and the configs expect.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { DEFAULT_COORDINATOR_PORT } from '../../cli/commands/coordinator.js';
import { labAtOf } from '../../cli/options/lab.js';
import { isLabUrl, resolveLabUrl } from '../../contracts/lab-roles.js';
import { loadPlanFile } from '../../coordinator/plan-loader.js';
import { DATASOURCE_UID } from '../../dashboards/src/grafana.js';
import { DEFAULT_LAB_PORT } from '../../contracts/lab-roles.js';
import { LAB_SERVERS } from '../../lab/index.js';
import {
  codeEnvVars,
  DEPLOY_DIR,
  hostPathOf,
  isObject,
  loadCompose,
  optionValues,
  readYaml,
  type ComposeService,
  type Yaml,
} from '../helpers/deploy.js';
import { REPO_ROOT } from '../helpers/repo.js';

const services = loadCompose();
const probefleet = [...services.values()].filter((s) => s.image === 'probefleet:local');
const role = (s: ComposeService) => s.command[0];
const workers = probefleet.filter((s) => role(s) === 'worker');
const only = (r: string) => {
  const found = probefleet.filter((s) => role(s) === r);
  assert.equal(found.length, 1, `one ${r} service`);
  return found[0]!;
};
const prometheus = services.get('prometheus')!;
const grafana = services.get('grafana')!;

/** host:port of a URL or a scrape target. */
function hostPort(target: string): { host: string; port: number } {
  const url = new URL(target.includes('://') ? target : `http://${target}`);
  return { host: url.hostname, port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)) };
}

function mountedFile(service: ComposeService, containerPath: string): string {
  const file = hostPathOf(service, containerPath);
  assert.ok(file, `${service.name}: nothing mounted at ${containerPath}`);
  return file;
}

test('compose.yaml parses: the services of the issue, every probefleet one built from the Dockerfile', () => {
  for (const name of ['redis', 'prometheus', 'pushgateway', 'alertmanager', 'grafana'])
    assert.ok(services.has(name), name);
  assert.deepEqual(probefleet.map(role).sort(), ['coordinator', 'lab', 'schedule', 'worker', 'worker', 'worker']);
  for (const s of probefleet) {
    assert.ok(isObject(s.raw.build) && s.raw.build.dockerfile === 'Dockerfile', `${s.name} builds the image`);
    assert.equal(
      path.resolve(DEPLOY_DIR, String(s.raw.build.context)),
      path.resolve(REPO_ROOT),
      `${s.name}: built from the repository`,
    );
  }
  assert.equal(
    new Set(workers.map((w) => optionValues(w.command, '--region')[0])).size,
    3,
    'three workers, three regions',
  );
});

test('Redis keeps its data: append-only file on a volume', () => {
  const redis = services.get('redis')!;
  assert.deepEqual(optionValues(redis.command, '--appendonly'), ['yes']);
  assert.ok((redis.raw.volumes as string[]).some((v) => v.endsWith(':/data')));
});

test('every file and directory a service mounts exists', () => {
  let mounts = 0;
  for (const s of services.values()) {
    for (const [target, source] of s.binds) {
      assert.ok(existsSync(source), `${s.name}: ${source} (mounted at ${target}) does not exist`);
      mounts++;
    }
  }
  assert.ok(mounts >= 8, `${mounts} mounts`);
});

test('every environment variable the code reads is set (or defaulted) for every probefleet service', () => {
  const vars = codeEnvVars();
  for (const name of ['REDIS_URL', 'PROBEFLEET_PUSHGATEWAY', 'PROBEFLEET_LOG_LEVEL', 'PROBEFLEET_HEALTH_URL'])
    assert.ok(vars.has(name), `the scan finds ${name}`);
  for (const s of probefleet) {
    const missing = [...vars]
      .filter(([name]) => !(name in s.environment))
      .map(([name, files]) => `${name} (read in ${files.join(', ')})`);
    assert.deepEqual(missing, [], `${s.name} lacks environment entries`);
  }
  // Read with ?? (not ||) somewhere: an empty value would be used as is.
  for (const s of probefleet)
    assert.match(s.environment.PROBEFLEET_LOG_LEVEL!, /^(trace|debug|info|warn|error|silent)$/);
  for (const w of workers)
    assert.ok(
      w.environment.PROBEFLEET_INSTANCE,
      `${w.name}: a stable instance (the container's host name changes when it is recreated)`,
    );
  assert.equal(
    new Set(workers.map((w) => w.environment.PROBEFLEET_INSTANCE)).size,
    workers.length,
    'one Pushgateway group per worker',
  );
});

test('the URLs in the environment name services of the stack', () => {
  for (const s of probefleet) {
    assert.equal(hostPort(s.environment.REDIS_URL!).host, 'redis', s.name);
    assert.equal(hostPort(s.environment.REDIS_URL!).port, 6379, s.name);
    const gateway = hostPort(s.environment.PROBEFLEET_PUSHGATEWAY!);
    assert.ok(services.has(gateway.host), `${s.name}: Pushgateway host ${gateway.host}`);
    assert.equal(gateway.port, 9091);
    assert.equal(
      hostPort(s.environment.PROBEFLEET_HEALTH_URL!).host,
      '127.0.0.1',
      `${s.name}: the health check asks the container itself`,
    );
  }
  const coordinator = only('coordinator');
  assert.equal(hostPort(coordinator.environment.PROBEFLEET_HEALTH_URL!).port, DEFAULT_COORDINATOR_PORT);
  assert.match(coordinator.environment.PROBEFLEET_HEALTH_URL!, /\/healthz$/);
  for (const w of workers) {
    assert.equal(
      hostPort(w.environment.PROBEFLEET_HEALTH_URL!).port,
      Number(w.environment.PROBEFLEET_METRICS_PORT),
      w.name,
    );
    assert.match(w.environment.PROBEFLEET_HEALTH_URL!, /\/metrics$/);
  }
  assert.equal(hostPort(only('lab').environment.PROBEFLEET_HEALTH_URL!).port, DEFAULT_LAB_PORT);
});

test('Prometheus: its config and rules are the mounted dashboards/ files, and its targets are the services', () => {
  const config = readYaml(mountedFile(prometheus, '/etc/prometheus/prometheus.yml')) as Yaml;
  assert.ok(prometheus.command.includes('--config.file=/etc/prometheus/prometheus.yml'));
  for (const rules of config.rule_files as string[]) assert.ok(existsSync(mountedFile(prometheus, rules)), rules);
  const jobs = new Map((config.scrape_configs as Yaml[]).map((j) => [j.job_name as string, j]));
  const targets = (job: string) =>
    ((jobs.get(job)!.static_configs as Yaml[]) ?? []).flatMap((c) => c.targets as string[]).map(hostPort);
  assert.equal(jobs.get('pushgateway')!.honor_labels, true);
  assert.deepEqual(targets('pushgateway'), [{ host: 'pushgateway', port: 9091 }]);
  assert.deepEqual(targets('probefleet-coordinator'), [
    { host: only('coordinator').name, port: DEFAULT_COORDINATOR_PORT },
  ]);
  assert.deepEqual(
    optionValues(only('coordinator').command, '--host'),
    ['0.0.0.0'],
    'the coordinator listens beyond its container',
  );
  assert.deepEqual(
    targets('probefleet-workers').sort((a, b) => a.host.localeCompare(b.host)),
    workers
      .map((w) => ({ host: w.name, port: Number(w.environment.PROBEFLEET_METRICS_PORT) }))
      .sort((a, b) => a.host.localeCompare(b.host)),
    'every worker is scraped, and nothing else',
  );
  for (const w of workers) assert.deepEqual(optionValues(w.command, '--metrics-host'), ['0.0.0.0'], w.name);
  const alerting = (((config.alerting as Yaml).alertmanagers as Yaml[])[0]!.static_configs as Yaml[])[0]!
    .targets as string[];
  assert.deepEqual(alerting.map(hostPort), [{ host: 'alertmanager', port: 9093 }]);
  assert.ok(existsSync(mountedFile(services.get('alertmanager')!, '/etc/alertmanager/alertmanager.yml')));
});

test('Grafana: provisioned datasource, dashboards and alerts parse, point at Prometheus and at dashboards that exist', () => {
  const provisioning = (kind: string) => {
    const dir = mountedFile(grafana, `/etc/grafana/provisioning/${kind}`);
    const files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f));
    assert.ok(files.length > 0, `${kind}: no files in ${dir}`);
    return files.map((f) => readYaml(path.join(dir, f)) as Yaml);
  };
  const datasources = provisioning('datasources').flatMap((f) => f.datasources as Yaml[]);
  const datasource = datasources.find((d) => d.uid === DATASOURCE_UID);
  assert.ok(datasource, `a datasource with uid ${DATASOURCE_UID}`);
  assert.deepEqual(hostPort(String(datasource.url)), { host: 'prometheus', port: 9090 });

  const providers = provisioning('dashboards').flatMap((f) => f.providers as Yaml[]);
  assert.ok(providers.length > 0);
  for (const provider of providers) {
    const dir = mountedFile(grafana, String((provider.options as Yaml).path));
    assert.ok(statSync(dir).isDirectory(), dir);
    const dashboards = readdirSync(dir).filter((f) => f.endsWith('.json'));
    assert.equal(dashboards.length, 3, `${dir}: the three dashboards`);
    for (const file of dashboards) {
      const dashboard = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as Yaml;
      assert.ok(
        typeof dashboard.uid === 'string' && Array.isArray(dashboard.panels) && dashboard.panels.length > 0,
        file,
      );
    }
  }

  const rules = provisioning('alerting').flatMap((f) => (f.groups as Yaml[]).flatMap((g) => g.rules as Yaml[]));
  assert.ok(rules.length >= 5);
  for (const rule of rules) {
    for (const query of rule.data as Yaml[])
      assert.ok(
        [DATASOURCE_UID, '__expr__'].includes(String(query.datasourceUid)),
        `${String(rule.title)}: ${String(query.datasourceUid)}`,
      );
  }
});

test("the nightly schedule: a mounted example plan whose regions are the workers' and whose targets are the lab service", async () => {
  const schedule = only('schedule');
  assert.deepEqual(schedule.command.slice(0, 2), ['schedule', 'add']);
  assert.equal(schedule.raw.restart, 'no', 'a one-shot');
  const planFile = mountedFile(schedule, schedule.command[2]!);
  assert.equal(path.dirname(planFile), path.join(REPO_ROOT, 'examples'), 'an example plan');
  const { plan } = await loadPlanFile(planFile);
  assert.ok(plan.schedule?.cron, 'the plan has its schedule');
  const regions = workers.map((w) => optionValues(w.command, '--region')[0]!).sort();
  assert.deepEqual([...plan.regions].sort(), regions);
  assert.deepEqual(
    optionValues(only('coordinator').command, '--region').sort(),
    regions,
    "the coordinator shows every region's queue",
  );
  const lab = only('lab');
  assert.deepEqual(optionValues(lab.command, '--host'), ['0.0.0.0']);
  const labPorts = new Set(LAB_SERVERS.map((s) => DEFAULT_LAB_PORT + s.offset));
  const labAt = optionValues(schedule.command, '--lab-at');
  assert.deepEqual(labAt, [`${lab.name}:${DEFAULT_LAB_PORT}`], 'lab targets go to the lab service');
  for (const target of plan.targets) {
    assert.ok(isLabUrl(target.url), `${target.name}: names a lab server (lab:...)`);
    const { host, port } = hostPort(resolveLabUrl(target.url, labAtOf(labAt[0]!)));
    assert.equal(host, lab.name, target.name);
    assert.ok(labPorts.has(port), `${target.name}: port ${port} is a lab server's`);
  }
  for (const w of workers)
    assert.ok(isObject(w.raw.depends_on) && 'lab' in w.raw.depends_on, `${w.name} starts after the lab`);
});

test('workers get longer than their shutdown grace to drain before SIGKILL', () => {
  for (const w of workers) {
    const grace = Number(optionValues(w.command, '--shutdown-grace-seconds')[0] ?? 30);
    const stop = /^(\d+)s$/.exec(String(w.raw.stop_grace_period));
    assert.ok(
      stop && Number(stop[1]) > grace,
      `${w.name}: stop_grace_period ${String(w.raw.stop_grace_period)} > ${grace}s`,
    );
  }
});
