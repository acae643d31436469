// The dns probe against the lab's DNS server, which counts the queries it gets for each name
// (TXT _queries.NAME): a cold lookup is one query, a warm one a cache hit until the TTL runs out.
// Then through Debian's dnsmasq forwarding to the lab (a real resolver, with and without a cache),
// with dig as a second opinion on a cold lookup's time while stress-ng loads the machine. Only
// loopback traffic; timings are held to structure (counts, and ratios with generous bounds).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { JobPayload } from '../../contracts/job.js';
import type { ResultOf } from '../../contracts/result.js';
import { median } from '../../common/stats.js';
import { createLogger } from '../../common/log.js';
import { dnsView } from '../../coordinator/report/views/dns.js';
import { renderRunReport } from '../../coordinator/report/text.js';
import { executeJob } from '../../worker/execute-job.js';
import { TargetPolicy } from '../../worker/target-policy.js';
import { digQueryMs, needs, startDnsmasq, withCpuLoad, type Dnsmasq } from '../helpers/dnsmasq.js';
import { runExamplePlan } from '../helpers/example-runs.js';
import { labDnsQueries, labForThisFile } from '../helpers/lab.js';
import { jobsOf } from '../helpers/plans.js';

const log = createLogger('test', 'silent');
const lab = labForThisFile();
const labResolver = () => `127.0.0.1:${lab.servers.dns.port}`;

/** A name of its own under the lab's zone, with the labels that set its answer ("slow-30.ttl-1"). */
const freshName = (labels: string) => `t${randomBytes(4).toString('hex')}.${labels}.lab.probefleet.test`;

async function dnsJobs(name: string, experiment: string): Promise<JobPayload[]> {
  return jobsOf(`
name: dns-test
jobTimeoutSeconds: 60
targets: [{ name: t, url: "http://${name}/" }]
experiments: [{ probe: dns, ${experiment} }]
`);
}

async function dns(name: string, experiment: string, policy?: TargetPolicy): Promise<ResultOf<'dns'>> {
  const [job] = await dnsJobs(name, experiment);
  return (await executeJob(job, { region: 'local', log, targetPolicy: policy })) as ResultOf<'dns'>;
}

const times = (r: ResultOf<'dns'>, fromCache?: boolean) =>
  r.details!.samples.filter((s) => !s.error && (fromCache === undefined || s.fromCache === fromCache)).map((s) => s.ms);

describe('dns probe against the lab', () => {
  test('cold: every lookup is a query of its own, and costs the server its delay', async () => {
    const name = freshName('slow-30');
    const result = await dns(name, `resolvers: ["${labResolver()}"], caches: [cold], lookups: 8`);
    assert.equal(result.ok, true, JSON.stringify(result.error));
    assert.equal(await labDnsQueries(lab, name), 8, 'the server had one query per lookup');
    const d = result.details!;
    assert.deepEqual([d.queries, d.cacheHits, d.samples.length], [8, 0, 8]);
    assert.ok(Math.min(...times(result)) >= 29, `each lookup waited for the answer: ${times(result).join(', ')}`);
    assert.deepEqual(d.samples[0].answers, ['127.0.0.1']);
    assert.equal(d.samples[0].ttl, 300);
    assert.equal(d.name, name);
    assert.deepEqual(d.servers, [labResolver()]);
    assert.equal(result.summary.phases.resolve?.n, 8);
    assert.equal(result.summary.connectionsOpened, 0);
    assert.deepEqual(result.findings, []);
  });

  test('warm: one query per TTL, the lookups between are cache hits that cost next to nothing', async () => {
    const name = freshName('slow-30.ttl-1');
    // 12 lookups 200 ms apart: 2.2 s, so a TTL of 1 s runs out twice.
    const result = await dns(name, `resolvers: ["${labResolver()}"], caches: [warm], lookups: 12, intervalMs: 200`);
    assert.equal(result.ok, true, JSON.stringify(result.error));
    const queried = await labDnsQueries(lab, name);
    const d = result.details!;
    assert.equal(d.queries, queried, 'the probe counted what the server saw');
    // At least one query per TTL that ran out, and no more than one per second the job took (a
    // busy machine stretches the pauses).
    const seconds = result.summary.durationMs / 1000;
    assert.ok(
      queried >= 2 && queried <= Math.ceil(seconds) + 1,
      `${queried} queries for 12 lookups over ${seconds.toFixed(1)} s with a TTL of 1 s`,
    );
    assert.equal(d.cacheHits, 12 - queried);
    assert.equal(d.samples[0].fromCache, false, 'the first lookup queries');
    const hits = times(result, true);
    assert.ok(median(hits) < median(times(result, false)) / 20, `hits ${hits.join(', ')}`);
    assert.ok(
      d.samples.filter((s) => s.fromCache).every((s) => s.ttl !== null && s.ttl <= 1),
      'a hit says what is left of the TTL',
    );
  });

  test('warm with a TTL of 0: nothing is kept, every lookup queries', async () => {
    const name = freshName('ttl-0');
    const result = await dns(name, `resolvers: ["${labResolver()}"], caches: [warm], lookups: 5`);
    assert.deepEqual([result.details!.queries, await labDnsQueries(lab, name)], [5, 5]);
  });

  test('a failed lookup is data: its outcome and DNS_FAILED; three in a row end the job', async () => {
    const nx = await dns(freshName('nxdomain'), `resolvers: ["${labResolver()}"], caches: [cold], lookups: 5`);
    assert.equal(nx.ok, false);
    assert.equal(nx.error?.code, 'DNS_FAILED');
    assert.match(nx.error!.message, /^stopped after 3 failed lookups in a row: nxdomain: /);
    assert.deepEqual(
      nx.details!.samples.map((s) => `${s.outcome} ${s.error?.code}`),
      Array(3).fill('nxdomain DNS_FAILED'),
    );
    const servfail = await dns(freshName('servfail'), `resolvers: ["${labResolver()}"], caches: [cold], lookups: 1`);
    assert.equal(servfail.details!.samples[0].outcome, 'servfail');
    assert.match(servfail.error!.message, /^all 1 lookups failed: servfail: /);
    const started = Date.now();
    const dropped = await dns(
      freshName('drop'),
      `resolvers: ["${labResolver()}"], caches: [warm], lookups: 2, timeoutMs: 300`,
    );
    assert.deepEqual(
      dropped.details!.samples.map((s) => s.outcome),
      ['timeout', 'timeout'],
    );
    assert.ok(Date.now() - started < 3_000, 'each lookup bounded by timeoutMs');
    // NODATA is an answer: the name exists, without an AAAA record.
    const noAaaa = await dns(
      freshName('no-aaaa'),
      `resolvers: ["${labResolver()}"], recordTypes: [AAAA], caches: [cold], lookups: 2`,
    );
    assert.equal(noAaaa.ok, true, JSON.stringify(noAaaa.error));
    assert.deepEqual(
      noAaaa.details!.samples.map((s) => `${s.outcome} ${s.answers.length}`),
      ['nodata 0', 'nodata 0'],
    );
  });

  test('rotating answers: DNS_ANSWERS_CHANGE from the cold lookups, none from a warm cache within the TTL', async () => {
    const name = freshName('rotate');
    const [cold, warm] = await Promise.all(
      (await dnsJobs(name, `resolvers: ["${labResolver()}"], lookups: 8`)).map(
        (job) => executeJob(job, { region: 'local', log }) as Promise<ResultOf<'dns'>>,
      ),
    );
    assert.equal(cold.variant.cache, 'cold');
    assert.deepEqual(
      cold.findings.map((f) => f.code),
      ['DNS_ANSWERS_CHANGE'],
    );
    assert.equal(cold.details!.distinctAnswerSets, 4);
    assert.deepEqual(warm.findings, [], 'a TTL of 300 s: the first answer is kept');
    const { blocks } = dnsView([cold, warm]);
    const block = blocks[0];
    assert.ok(block.kind === 'table');
    assert.equal(block.table.rows.length, 1, 'cold and warm on one row');
    assert.match(block.table.rows[0].join(' | '), / \| 1\/8 \| (127\.0\.0\.[1-4] \(\d+\)(, |$| )){4}/);
  });

  test('DNS_SLOW: the median cold lookup over slowMs; not under it', async () => {
    const slow = await dns(
      freshName('slow-60'),
      `resolvers: ["${labResolver()}"], caches: [cold], lookups: 3, slowMs: 40`,
    );
    assert.deepEqual(
      slow.findings.map((f) => f.code),
      ['DNS_SLOW'],
    );
    assert.match(slow.findings[0].evidence, /over slowMs 40 ms$/);
    const fine = await dns(
      freshName('slow-5'),
      `resolvers: ["${labResolver()}"], caches: [cold], lookups: 3, slowMs: 1000`,
    );
    assert.deepEqual(fine.findings, []);
  });

  test('a resolver the target policy refuses gets nothing: refused before a query is sent', async () => {
    const noLoopback = new TargetPolicy({ allowLoopback: false, allowTargets: [] });
    const name = freshName('www');
    const refused = await dns(name, `resolvers: ["${labResolver()}"], caches: [cold], lookups: 3`, noLoopback);
    assert.equal(refused.error?.code, 'TARGET_REFUSED_BY_POLICY');
    assert.match(
      refused.error!.message,
      /^127\.0\.0\.1 is loopback \(127\.0\.0\.0\/8\): allowed only with --allow-loopback$/,
    );
    assert.equal(refused.summary.requests, 0);
    assert.equal(await labDnsQueries(lab, name), 0, 'the lab had no query');
    // A private address: the policy's decision alone (nothing listens there).
    const privateResolver = await dns(name, 'resolvers: ["10.11.12.13:53"], caches: [cold]', noLoopback);
    assert.equal(privateResolver.error?.code, 'TARGET_REFUSED_BY_POLICY');
    assert.match(
      privateResolver.error!.message,
      /^10\.11\.12\.13 is private \(10\.0\.0\.0\/8\): allowed only by --allow-targets/,
    );
  });

  test('a job whose target is an IP address (which the plan refuses) looks nothing up', async () => {
    const [job] = await dnsJobs('www.example', `resolvers: ["${labResolver()}"], caches: [cold]`);
    const result = await executeJob(
      { ...job, target: { ...job.target, url: 'http://192.0.2.1/' } },
      { region: 'local', log },
    );
    assert.equal(result.error?.code, 'INVALID_JOB');
    assert.match(result.error!.message, /IP address/);
  });

  test("examples/dns.yaml: the lecture's 2.6 ms, a slow name and a rotating one", async () => {
    const report = await runExamplePlan(lab, 'dns.yaml', { caps: { lookups: 12 } });
    assert.ok(
      report.results.every((r) => r.ok),
      JSON.stringify(report.results.filter((r) => !r.ok).map((r) => r.error)),
    );
    assert.equal(report.results.length, 7);
    assert.deepEqual(report.findings.map((f) => `${f.code} ${f.target}`).sort(), [
      'DNS_ANSWERS_CHANGE rotating',
      'DNS_ANSWERS_CHANGE rotating',
      'DNS_SLOW far',
    ]);
    const text = renderRunReport(report);
    assert.match(text, /DNS lookups of slow-150\.lab\.probefleet\.test \(target far\)/);
    assert.match(text, /local\s+127\.0\.0\.1:\d+\s+AAAA\s+[\d.]+ ms/);
  });
});

describe('dns probe through dnsmasq, a real resolver', { ...needs('dnsmasq', 'dnsmasq') }, () => {
  let uncached: Dnsmasq;
  let caching: Dnsmasq;
  before(async () => {
    uncached = await startDnsmasq(lab.servers.dns.port, 0);
    caching = await startDnsmasq(lab.servers.dns.port, 1000);
  });
  after(async () => {
    await uncached?.stop();
    await caching?.stop();
  });

  test('no cache in dnsmasq: a cold lookup reaches the lab each time; warm, once per TTL', async () => {
    const cold = freshName('slow-40');
    const coldResult = await dns(cold, `resolvers: ["${uncached.resolver}"], caches: [cold], lookups: 6`);
    assert.equal(coldResult.ok, true, JSON.stringify(coldResult.error));
    assert.equal(await labDnsQueries(lab, cold), 6, 'one query upstream per cold lookup');
    assert.ok(Math.min(...times(coldResult)) >= 39, `each paid the delay: ${times(coldResult).join(', ')}`);

    const warm = freshName('slow-40.ttl-1');
    const warmResult = await dns(
      warm,
      `resolvers: ["${uncached.resolver}"], caches: [warm], lookups: 12, intervalMs: 200`,
    );
    const upstream = await labDnsQueries(lab, warm);
    assert.equal(warmResult.details!.queries, upstream);
    const seconds = warmResult.summary.durationMs / 1000;
    assert.ok(
      upstream >= 2 && upstream <= Math.ceil(seconds) + 1,
      `${upstream} queries upstream over ${seconds.toFixed(1)} s with a TTL of 1 s`,
    );
    assert.ok(median(times(warmResult, true)) < 1, 'a cache hit costs under a millisecond');
  });

  test('a caching dnsmasq: cold in the client is warm at the resolver (one query upstream for all)', async () => {
    const name = freshName('slow-40');
    const result = await dns(name, `resolvers: ["${caching.resolver}"], caches: [cold], lookups: 6`);
    assert.equal(await labDnsQueries(lab, name), 1);
    const [first, ...rest] = times(result);
    assert.ok(first >= 39, `the first lookup paid the delay: ${first}`);
    assert.ok(median(rest) < first / 4, `the others were answered from dnsmasq's cache: ${rest.join(', ')}`);
  });

  test('the probe and dig agree on a cold lookup, with stress-ng --cpu 2 beside them', {
    ...needs('dig', 'dnsutils'),
  }, async (t) => {
    // Each waits for the same 40 ms upstream and adds its own costs; on a busy machine either may
    // be descheduled for tens of milliseconds now and then (dig as a process of its own), so the
    // fastest of seven is compared, and the medians only shown.
    const measure = async () => {
      const dig: number[] = [];
      for (let i = 0; i < 7; i++) dig.push(await digQueryMs(uncached, freshName('slow-40')));
      const probe = await dns(freshName('slow-40'), `resolvers: ["${uncached.resolver}"], caches: [cold], lookups: 7`);
      return { dig, probe: times(probe) };
    };
    const loaded = needs('stress-ng', 'stress-ng').skip === false;
    const { dig, probe } = loaded ? await withCpuLoad(2, measure) : await measure();
    const [digMin, probeMin] = [Math.min(...dig), Math.min(...probe)];
    t.diagnostic(
      `cold lookup through dnsmasq (40 ms upstream)${loaded ? ', stress-ng --cpu 2 beside' : ''}: ` +
        `dig fastest ${digMin} ms, median ${median(dig)} ms; probe fastest ${probeMin.toFixed(2)} ms, median ${median(probe).toFixed(2)} ms (7 each)`,
    );
    assert.equal(probe.length, 7);
    // dig reports whole milliseconds.
    assert.ok(
      digMin >= 39 && probeMin >= 39,
      `dig ${dig.join(', ')}; probe ${probe.map((ms) => ms.toFixed(1)).join(', ')}`,
    );
    assert.ok(
      probeMin / digMin > 0.5 && probeMin / digMin < 2,
      `dig fastest ${digMin} ms, probe fastest ${probeMin.toFixed(1)} ms`,
    );
  });
});
