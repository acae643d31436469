// Emulated regions on one Linux machine: network namespaces joined by veth links with a fixed
// added round-trip time per region and an optional rate limit, for IPv4 and IPv6.
//
//            region "near" (ns)                              target (ns)
//   wan  10.77.1.2/24  ──veth, +RTT/2 each way──────▶ r0   10.77.1.1/24
//   wan6 fd77:1::2/64  ──veth, +IPv6 RTT/2 each way─▶ r0v6 fd77:1::1/64
//            region "far" (ns)                               lo  10.77.0.1/32, fd77::1/128  ◀─ the lab target listens here
//   wan  10.77.2.2/24  ──veth, +RTT/2 each way──────▶ r1   10.77.2.1/24
//   wan6 fd77:2::2/64  ──veth, +IPv6 RTT/2 each way─▶ r1v6 fd77:2::1/64
//
// Every region reaches the target at the same addresses (TARGET_ADDRESS, TARGET_ADDRESS_V6) over
// its own links, so one plan serves all regions. Each family has a link of its own, so each has
// its own RTT (RegionSpec.ipv6RttMs); rate, loss, jitter and seed are the same on both. Half the
// RTT is added in each direction: with netem on both ends of a link where the kernel has it,
// otherwise by an NFQUEUE helper (delay/nfq-delay.c) per link holding its outgoing and incoming
// packets. Loss and jitter are always the helper's (seeded draws, packet order kept); rate limits
// are tbf on both ends. Ports of this machine's loopback (Redis) are relayed into every region at
// 127.0.0.1, without delay (port-relay.ts). Cleanup: cleanup.ts.
import { execFile, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createLogger, type Logger } from '../common/log.js';
import { NAME_PATTERN } from '../contracts/common.js';
import {
  cleanupStaleRegions,
  removeInstanceSync,
  runDirFor,
  trackInstance,
  untrackInstance,
  type InstanceResources,
} from './cleanup.js';
import { nfqDelayBinary } from './delay/nfq-delay-binary.js';
import { formatRelayEnd, relaySocketPath, type RelayEnd } from './port-relay.js';
import { checkNfqueueSupported, checkRegionsSupported, RegionsUnavailableError } from './preflight.js';
import { CommandError, run } from './system.js';

/** Where the target host answers, from every region. Exists only inside the harness's namespaces. */
export const TARGET_ADDRESS = '10.77.0.1';
/** Where the target host answers over IPv6 (a unique-local address), from every region. */
export const TARGET_ADDRESS_V6 = 'fd77::1';
/** The --allow-targets entry region workers and runners need (a private address): the target host only. */
export const TARGET_ALLOWANCE = `${TARGET_ADDRESS}/32`;
/** The same for the target host's IPv6 address (unique-local, which the target policy refuses by default). */
export const TARGET_ALLOWANCE_V6 = `${TARGET_ADDRESS_V6}/128`;
/** Both: what region workers and runners are allowed to reach. */
export const TARGET_ALLOWANCES = [TARGET_ALLOWANCE, TARGET_ALLOWANCE_V6];
export const MAX_REGIONS = 200;
const MAX_RTT_MS = 10_000;
/** The seed of loss and jitter draws when a region names none: the same losses on every run. */
export const DEFAULT_LINK_SEED = 1;
const MAX_SEED = 2 ** 32 - 1;
/** Interface names inside the namespaces (fixed: each namespace has its own): the IPv4 link's, then the IPv6 link's. */
const REGION_LINK = 'wan';
const REGION_LINK_V6 = 'wan6';
const targetLink = (index: number) => `r${index}`;
const targetLinkV6 = (index: number) => `r${index}v6`;
/** Real-time priority (SCHED_RR) of measured processes: below the delay helper's (SCHED_FIFO 10),
 * above all ordinary work, so a busy machine does not show up as network time. */
const MEASURED_PRIORITY = ['chrt', '--rr', '5'];
const linkPrefix = (index: number) => `10.77.${index + 1}`;
/** An address on region i's IPv6 link, fd77:i+1::/64 (the digits of its IPv4 link's 10.77.i+1.0/24):
 * host 1 is the target's end, 2 the region's. */
const linkAddressV6 = (index: number, host: 1 | 2) => `fd77:${index + 1}::${host}`;

export interface RegionSpec {
  /** a-z, 0-9, "-", "_" (a plan's region name). */
  name: string;
  /** Round-trip time added between this region and the target (over IPv4, and over IPv6 unless
   * ipv6RttMs says otherwise); 0 adds nothing. */
  rttMs: number;
  /** Round-trip time added between this region and the target's IPv6 address.
   * @defaultValue rttMs */
  ipv6RttMs?: number;
  /** Rate limit of the link in each direction (tbf), bytes per second; none when absent. */
  rateBytesPerSecond?: number;
  /** Share of packets lost, per cent, each way: up = region to target, down = target to region. */
  lossPercent?: { up: number; down: number };
  /** A round trip varies within RTT ± jitterMs: each packet's one-way delay is RTT/2 ± jitterMs/2
   * (uniform), and never overtakes the packet before it. At most the RTT (of either family). */
  jitterMs?: number;
  /** Seed of the loss and jitter draws: the same seed, the same draws (docs/regions.md).
   * @defaultValue DEFAULT_LINK_SEED */
  seed?: number;
}

/** Whether the region's link loses packets or varies their delay (the NFQUEUE helper's work alone). */
export const hasLossOrJitter = (spec: RegionSpec) =>
  (spec.lossPercent !== undefined && (spec.lossPercent.up > 0 || spec.lossPercent.down > 0)) ||
  (spec.jitterMs ?? 0) > 0;

export type DelayMechanism = 'netem' | 'nfqueue';

export interface RegionsOptions {
  regions: RegionSpec[];
  /** How to add delay: netem where the kernel has it, else the NFQUEUE helper.
   * @defaultValue 'auto' */
  delay?: 'auto' | DelayMechanism;
  /** TCP ports of this machine's 127.0.0.1 that every region reaches at its own 127.0.0.1,
   * without added delay (Redis for the workers).
   * @defaultValue [] */
  forwardPorts?: number[];
  /** Give measured processes a real-time priority (see InNamespaceOptions.realtime).
   * @defaultValue true */
  realtime?: boolean;
  log?: Logger;
}

export interface EmulatedRegion extends RegionSpec {
  /** The RTT to the target's IPv6 address: the spec's, else rttMs. */
  ipv6RttMs: number;
  namespace: string;
  /** The region's own address on its IPv4 link. */
  address: string;
  /** The region's own address on its IPv6 link. */
  addressV6: string;
}

export interface InNamespaceOptions {
  /** Run at a real-time priority (when the machine allows it: see `Regions.realtime`), for
   * processes whose timing is measured: the lab target, probes, curl. */
  realtime?: boolean;
}

export interface Regions {
  /** `<pid>-<tag>`, part of every namespace name. */
  id: string;
  target: { namespace: string; address: string; addressV6: string };
  regions: EmulatedRegion[];
  /** How delay was added; 'none' when every RTT is 0. */
  delay: DelayMechanism | 'none';
  forwardPorts: number[];
  /** Whether measured processes get a real-time priority here (needs CAP_SYS_NICE). */
  realtime: boolean;
  region(name: string): EmulatedRegion;
  /** Starts a command inside one of the namespaces (`ip netns exec`). */
  spawn(namespace: string, command: string, args: string[], options?: SpawnOptions & InNamespaceOptions): ChildProcess;
  /** Runs a command inside one of the namespaces to its end; resolves with its stdout. */
  exec(
    namespace: string,
    command: string,
    args: string[],
    options?: InNamespaceOptions & { timeoutMs?: number },
  ): Promise<string>;
  /** Stops the helpers and removes every namespace; safe to call more than once. */
  close(): Promise<void>;
}

/** Throws a RangeError naming the first thing wrong with the regions (and the delay asked for). */
export function validateRegionSpecs(specs: RegionSpec[], delay: RegionsOptions['delay'] = 'auto'): void {
  if (specs.length === 0 || specs.length > MAX_REGIONS)
    throw new RangeError(`between 1 and ${MAX_REGIONS} regions, got ${specs.length}`);
  const seen = new Set<string>();
  for (const spec of specs) {
    if (!NAME_PATTERN.test(spec.name))
      throw new RangeError(`region name "${spec.name}": use 1-63 characters of a-z, 0-9, "-" or "_"`);
    if (seen.has(spec.name)) throw new RangeError(`region "${spec.name}" is listed twice`);
    seen.add(spec.name);
    if (!(spec.rttMs >= 0 && spec.rttMs <= MAX_RTT_MS))
      throw new RangeError(`region "${spec.name}": RTT must be 0..${MAX_RTT_MS} ms, got ${spec.rttMs}`);
    if (spec.ipv6RttMs !== undefined && !(spec.ipv6RttMs >= 0 && spec.ipv6RttMs <= MAX_RTT_MS))
      throw new RangeError(`region "${spec.name}": IPv6 RTT must be 0..${MAX_RTT_MS} ms, got ${spec.ipv6RttMs}`);
    if (spec.rateBytesPerSecond !== undefined && !(spec.rateBytesPerSecond >= 1000)) {
      throw new RangeError(`region "${spec.name}": rate must be at least 1000 bytes/s, got ${spec.rateBytesPerSecond}`);
    }
    for (const [way, percent] of Object.entries(spec.lossPercent ?? {})) {
      if (!(percent >= 0 && percent <= 100))
        throw new RangeError(`region "${spec.name}": loss ${way} must be 0..100 %, got ${percent}`);
    }
    const smallestRtt = Math.min(spec.rttMs, spec.ipv6RttMs ?? spec.rttMs);
    if (spec.jitterMs !== undefined && !(spec.jitterMs >= 0 && spec.jitterMs <= smallestRtt)) {
      const which = smallestRtt < spec.rttMs ? 'the IPv6 RTT' : 'the RTT';
      throw new RangeError(
        `region "${spec.name}": jitter must be 0..${smallestRtt} ms (at most ${which}: a packet cannot arrive before it was sent), got ${spec.jitterMs}`,
      );
    }
    if (spec.seed !== undefined && !(Number.isInteger(spec.seed) && spec.seed >= 0 && spec.seed <= MAX_SEED))
      throw new RangeError(`region "${spec.name}": seed must be an integer 0..${MAX_SEED}, got ${spec.seed}`);
    if (delay === 'netem' && hasLossOrJitter(spec))
      throw new RangeError(
        `region "${spec.name}": loss and jitter come from the NFQUEUE helper (seeded draws, packet order kept), not netem; use --delay nfqueue or auto`,
      );
  }
}

interface Helper {
  what: string;
  child: ChildProcess;
  stderr: string[];
  stopping: boolean;
}

const RELAY_ENTRY = fileURLToPath(new URL('./relay-entry.js', import.meta.url));

const relayArgs = (pairs: [RelayEnd, RelayEnd][]) => [
  RELAY_ENTRY,
  ...pairs.map(([listen, connect]) => `${formatRelayEnd(listen)}=${formatRelayEnd(connect)}`),
];

/** Starts a helper (in a namespace, or in this one with namespace null) and waits for its "ready" line on stdout. */
function startHelper(
  spawnIn: Regions['spawn'],
  namespace: string | null,
  what: string,
  command: string,
  args: string[],
  log: Logger,
): Promise<Helper> {
  const stdio: SpawnOptions = { stdio: ['pipe', 'pipe', 'pipe'] };
  const child = namespace === null ? spawn(command, args, stdio) : spawnIn(namespace, command, args, stdio);
  const helper: Helper = { what, child, stderr: [], stopping: false };
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => helper.stderr.push(chunk));
  const stderrText = () => (helper.stderr.length ? `: ${helper.stderr.join('').trim()}` : '');
  return new Promise((resolve, reject) => {
    let ready = false;
    const timer = setTimeout(() => fail(new Error(`${what} did not start within 10 s`)), 10_000);
    const fail = (err: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${err.message}${stderrText()}`));
    };
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (!ready && out.includes('ready\n')) {
        ready = true;
        clearTimeout(timer);
        resolve(helper);
      }
    });
    child.once('error', fail);
    child.once('exit', (code, signal) => {
      const how = signal ?? `code ${code}`;
      if (!ready) fail(new Error(`${what} exited (${how}) while starting`));
      // A delay helper gone means undelayed packets (--queue-bypass): never silently.
      else if (!helper.stopping)
        log.error(
          { helper: what, exit: how, stderr: helper.stderr.join('').trim() },
          'a region helper exited early; its region is no longer emulated faithfully',
        );
    });
  });
}

/** Ends a helper by closing its stdin (it exits on end of file), then waits for it briefly. */
async function stopHelper(helper: Helper, log: Logger): Promise<void> {
  const { child } = helper;
  helper.stopping = true;
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.stdin?.end();
    const timer = setTimeout(() => child.kill('SIGTERM'), 2_000);
    await exited;
    clearTimeout(timer);
  }
  const report = helper.stderr.join('').trim();
  if (report) log.debug({ helper: helper.what, report }, 'helper stopped');
}

/** One of a region's two links to the target: each carries one family, with that family's RTT. */
interface RegionLink {
  region: EmulatedRegion;
  family: 4 | 6;
  rttMs: number;
  /** Its two ends as [namespace, device]: the region's, then the target's. */
  ends: [[string, string], [string, string]];
  /** The helper's first queue takes the link's outgoing packets, the next one its incoming ones
   * (queues are per namespace: the region's two helpers take 0-1 and 2-3). */
  queue: number;
  /** What hands the link's packets to the helper. */
  iptables: 'iptables-legacy' | 'ip6tables-legacy';
}

function regionLinks(targetNamespace: string, index: number, region: EmulatedRegion): RegionLink[] {
  return [
    {
      region,
      family: 4,
      rttMs: region.rttMs,
      ends: [
        [region.namespace, REGION_LINK],
        [targetNamespace, targetLink(index)],
      ],
      queue: 0,
      iptables: 'iptables-legacy',
    },
    {
      region,
      family: 6,
      rttMs: region.ipv6RttMs,
      ends: [
        [region.namespace, REGION_LINK_V6],
        [targetNamespace, targetLinkV6(index)],
      ],
      queue: 2,
      iptables: 'ip6tables-legacy',
    },
  ];
}

/** The NFQUEUE helper's command line for a region's link: half the link's RTT (and jitter) each
 * way, loss per direction in parts per million, the seed. */
function nfqDelayArgs(link: RegionLink): string[] {
  const { region } = link;
  const ppm = (percent = 0) => String(Math.round(percent * 1e4));
  return [
    '--queue',
    String(link.queue),
    '--delay-us',
    String(Math.round(link.rttMs * 500)),
    '--jitter-us',
    String(Math.round((region.jitterMs ?? 0) * 1000)),
    '--loss-out',
    ppm(region.lossPercent?.up),
    '--loss-in',
    ppm(region.lossPercent?.down),
    '--seed',
    String(region.seed ?? DEFAULT_LINK_SEED),
  ];
}

/** A full Ethernet frame (1514 B) with room to spare: tbf cuts GSO packets into frames, and drops
 * any frame bigger than its bucket. */
const MIN_TBF_BURST = 1600;

function tbfArgs(rateBytesPerSecond: number): string[] {
  // Burst: 1 ms of the rate, at least one frame. A real link of this rate sends one frame at a
  // time; a bigger bucket lets the start of every answer through at once (with 16 KiB, the
  // gzipped products JSON crossed a 1 MB/s link in 8 ms instead of 21).
  const burst = Math.max(MIN_TBF_BURST, Math.round(rateBytesPerSecond / 1000));
  return ['tbf', 'rate', `${Math.round(rateBytesPerSecond * 8)}bit`, 'burst', String(burst), 'latency', '300ms'];
}

export async function startRegions(options: RegionsOptions): Promise<Regions> {
  const log = options.log ?? createLogger('regions');
  validateRegionSpecs(options.regions, options.delay);
  const forwardPorts = [...new Set(options.forwardPorts ?? [])];
  for (const port of forwardPorts) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`cannot forward port ${port}`);
  }
  checkRegionsSupported();
  cleanupStaleRegions(log);

  const id = `${process.pid}-${randomBytes(2).toString('hex')}`;
  const targetNamespace = `pf-${id}-target`;
  const regions: EmulatedRegion[] = options.regions.map((spec, index) => ({
    ...spec,
    ipv6RttMs: spec.ipv6RttMs ?? spec.rttMs,
    namespace: `pf-${id}-region-${spec.name}`,
    address: `${linkPrefix(index)}.2`,
    addressV6: linkAddressV6(index, 2),
  }));
  const helpers: Helper[] = [];
  const instance: InstanceResources = {
    id,
    namespaces: [targetNamespace, ...regions.map((r) => r.namespace)],
    runDir: runDirFor(id),
    beforeRemove: () => {
      for (const helper of helpers) helper.stopping = true;
    },
  };
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      await Promise.all(helpers.map((helper) => stopHelper(helper, log)));
      removeInstanceSync(instance, log);
      untrackInstance(id);
      log.debug({ id }, 'emulated regions removed');
    })());

  trackInstance(instance);
  try {
    await mkdir(instance.runDir, { recursive: true, mode: 0o700 });
    const realtime = (options.realtime ?? true) && (await realtimeAllowed(log));
    const { spawnIn, execIn } = namespaceCommands(realtime);
    await linkRegions(targetNamespace, regions);

    const mechanism = await shapeLinks(targetNamespace, regions, options.delay ?? 'auto', spawnIn, helpers, log);
    if (forwardPorts.length > 0) await startPortRelays(spawnIn, instance.runDir, forwardPorts, regions, helpers, log);

    log.info(
      {
        id,
        delay: mechanism,
        regions: regions.map(({ name, rttMs, ipv6RttMs, rateBytesPerSecond, lossPercent, jitterMs, seed }) => ({
          name,
          rttMs,
          ipv6RttMs,
          rateBytesPerSecond,
          lossPercent,
          jitterMs,
          seed,
        })),
      },
      'emulated regions up',
    );
    return {
      id,
      target: { namespace: targetNamespace, address: TARGET_ADDRESS, addressV6: TARGET_ADDRESS_V6 },
      regions,
      delay: mechanism,
      forwardPorts,
      realtime,
      region(name) {
        const found = regions.find((r) => r.name === name);
        if (!found) throw new Error(`no emulated region "${name}" (regions: ${regions.map((r) => r.name).join(', ')})`);
        return found;
      },
      spawn: spawnIn,
      exec: execIn,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Whether this machine lets measured processes run at MEASURED_PRIORITY (needs CAP_SYS_NICE). */
function realtimeAllowed(log: Logger): Promise<boolean> {
  return run(MEASURED_PRIORITY[0], [...MEASURED_PRIORITY.slice(1), 'true']).then(
    () => true,
    (err: Error) => {
      log.warn(
        { err: err.message },
        'no real-time priority for measured processes here; other work on this machine will show in the timings',
      );
      return false;
    },
  );
}

/** `Regions.spawn` and `Regions.exec`: `ip netns exec`, at a real-time priority when asked and allowed. */
function namespaceCommands(realtime: boolean): { spawnIn: Regions['spawn']; execIn: Regions['exec'] } {
  const inNamespace = (namespace: string, command: string, args: string[], options: InNamespaceOptions) => [
    'netns',
    'exec',
    namespace,
    ...(options.realtime && realtime ? MEASURED_PRIORITY : []),
    command,
    ...args,
  ];
  const spawnIn: Regions['spawn'] = (namespace, command, args, { realtime: wanted, ...spawnOptions } = {}) =>
    spawn('ip', inNamespace(namespace, command, args, { realtime: wanted }), spawnOptions);
  const execIn: Regions['exec'] = (namespace, command, args, options = {}) =>
    new Promise((resolve, reject) => {
      execFile(
        'ip',
        inNamespace(namespace, command, args, options),
        { timeout: options.timeoutMs ?? 60_000, maxBuffer: 16 << 20 },
        (err, stdout, stderr) =>
          err
            ? reject(
                new Error(
                  `${command} in ${namespace}: ${err.message.split('\n')[0]}${stderr ? `\n${stderr.trim()}` : ''}`,
                ),
              )
            : resolve(stdout),
      );
    });
  return { spawnIn, execIn };
}

/** The target namespace with TARGET_ADDRESS and TARGET_ADDRESS_V6, and each region's namespace
 * joined to it by two veth links: one for IPv4, one for IPv6. */
async function linkRegions(targetNamespace: string, regions: EmulatedRegion[]): Promise<void> {
  await createNamespace(targetNamespace);
  await run('ip', ['-n', targetNamespace, 'addr', 'add', `${TARGET_ADDRESS}/32`, 'dev', 'lo']);
  await run('ip', ['-n', targetNamespace, '-6', 'addr', 'add', `${TARGET_ADDRESS_V6}/128`, 'dev', 'lo']);
  for (const [index, region] of regions.entries()) {
    await createNamespace(region.namespace);
    const [v4, v6] = regionLinks(targetNamespace, index, region);
    await addVeth(v4, `${linkPrefix(index)}.1/24`, `${region.address}/24`);
    await run('ip', [
      '-n',
      region.namespace,
      'route',
      'add',
      `${TARGET_ADDRESS}/32`,
      'via',
      `${linkPrefix(index)}.1`,
      'dev',
      REGION_LINK,
    ]);
    // nodad: the addresses are usable at once (duplicate address detection would hold them for a second or two).
    await addVeth(v6, `${linkAddressV6(index, 1)}/64`, `${region.addressV6}/64`, ['nodad']);
    await run('ip', [
      '-n',
      region.namespace,
      '-6',
      'route',
      'add',
      `${TARGET_ADDRESS_V6}/128`,
      'via',
      linkAddressV6(index, 1),
      'dev',
      REGION_LINK_V6,
    ]);
    await addPermanentNeighbours(v6, linkAddressV6(index, 1), region.addressV6);
  }
}

/** A veth pair from the target's end (created in the target namespace) to the region's, with an
 * address on each end, both up. */
async function addVeth(link: RegionLink, targetAddress: string, regionAddress: string, flags: string[] = []) {
  const [[regionNamespace, regionDev], [targetNamespace, targetDev]] = link.ends;
  await run('ip', [
    '-n',
    targetNamespace,
    'link',
    'add',
    targetDev,
    'type',
    'veth',
    'peer',
    'name',
    regionDev,
    'netns',
    regionNamespace,
  ]);
  for (const [namespace, dev, address] of [
    [targetNamespace, targetDev, targetAddress],
    [regionNamespace, regionDev, regionAddress],
  ]) {
    await run('ip', ['-n', namespace, 'addr', 'add', address, 'dev', dev, ...flags]);
    await run('ip', ['-n', namespace, 'link', 'set', 'dev', dev, 'up']);
  }
}

/** Each end of an IPv6 link knows the other's link-layer address for good: no neighbour discovery
 * crosses the delayed link, so a region's first IPv6 connection costs one RTT like every other
 * (it would wait a round trip more for the answer to its neighbour solicitation), and no probe
 * of a stale neighbour ever takes the helper's time. IPv4's ARP is no IP packet: the NFQUEUE
 * helper never holds it. */
async function addPermanentNeighbours(link: RegionLink, targetAddress: string, regionAddress: string) {
  const [regionEnd, targetEnd] = link.ends;
  for (const [[namespace, dev], [peerNamespace, peerDev], peerAddress] of [
    [regionEnd, targetEnd, targetAddress],
    [targetEnd, regionEnd, regionAddress],
  ] as const) {
    const mac = await linkLayerAddress(peerNamespace, peerDev);
    await run('ip', [
      '-n',
      namespace,
      '-6',
      'neigh',
      'replace',
      peerAddress,
      'lladdr',
      mac,
      'dev',
      dev,
      'nud',
      'permanent',
    ]);
  }
}

async function linkLayerAddress(namespace: string, dev: string): Promise<string> {
  const [link] = JSON.parse(await run('ip', ['-n', namespace, '-j', 'link', 'show', 'dev', dev])) as {
    address?: string;
  }[];
  if (!link?.address) throw new Error(`no link-layer address on ${dev} in ${namespace}`);
  return link.address;
}

/** Half the link's RTT on one end (netem), with the rate limit under it. */
async function addNetem(namespace: string, dev: string, link: RegionLink): Promise<void> {
  const oneWayUs = Math.round(link.rttMs * 500);
  const { rateBytesPerSecond } = link.region;
  await run('tc', [
    '-n',
    namespace,
    'qdisc',
    'replace',
    'dev',
    dev,
    'root',
    'handle',
    '1:',
    'netem',
    'delay',
    `${oneWayUs}us`,
    'limit',
    '100000',
  ]);
  if (rateBytesPerSecond)
    await run('tc', [
      '-n',
      namespace,
      'qdisc',
      'add',
      'dev',
      dev,
      'parent',
      '1:1',
      'handle',
      '10:',
      ...tbfArgs(rateBytesPerSecond),
    ]);
}

/** Delay, rate limits, loss and jitter on both links of every region (each link with its own
 * family's RTT, the rest the same on both); returns how delay was added. */
async function shapeLinks(
  targetNamespace: string,
  regions: EmulatedRegion[],
  wanted: 'auto' | DelayMechanism,
  spawnIn: Regions['spawn'],
  helpers: Helper[],
  log: Logger,
): Promise<DelayMechanism | 'none'> {
  const links = regions.flatMap((region, index) => regionLinks(targetNamespace, index, region));
  const delayed = links.filter((link) => link.rttMs > 0 || hasLossOrJitter(link.region));
  const mechanism =
    delayed.length === 0 ? 'none' : await chooseDelay(wanted, [...new Set(delayed.map((l) => l.region))], log);
  for (const link of links) {
    const rate = link.region.rateBytesPerSecond;
    if (mechanism === 'netem' && link.rttMs > 0) {
      for (const [namespace, dev] of link.ends) await addNetem(namespace, dev, link);
      continue;
    }
    if (rate) {
      for (const [namespace, dev] of link.ends)
        await run('tc', ['-n', namespace, 'qdisc', 'add', 'dev', dev, 'root', ...tbfArgs(rate)]);
    }
    if (mechanism === 'nfqueue' && delayed.includes(link)) await startNfqueueDelay(spawnIn, link, helpers, log);
  }
  return mechanism;
}

/** netem where the kernel has it and asked for or left to us, unless a link loses or jitters
 * (only the helper does those, so it adds every region's delay then); else the helper. */
async function chooseDelay(
  wanted: 'auto' | DelayMechanism,
  linked: EmulatedRegion[],
  log: Logger,
): Promise<DelayMechanism> {
  const probe = linked[0];
  if (wanted !== 'nfqueue' && !linked.some(hasLossOrJitter)) {
    try {
      await run('tc', ['-n', probe.namespace, 'qdisc', 'add', 'dev', REGION_LINK, 'root', 'netem', 'delay', '1ms']);
      await run('tc', ['-n', probe.namespace, 'qdisc', 'del', 'dev', REGION_LINK, 'root']);
      return 'netem';
    } catch (err) {
      if (!(err instanceof CommandError)) throw err;
      if (wanted === 'netem')
        throw new RegionsUnavailableError(`netem was asked for, but this kernel cannot add it: ${err.stderr.trim()}`);
      log.debug({ tc: err.stderr.trim() }, 'no netem here; delaying with the NFQUEUE helper');
    }
  }
  checkNfqueueSupported();
  return 'nfqueue';
}

/** The NFQUEUE delay helper of one of a region's links (added to `helpers` as soon as it runs, so
 * close() stops it), then the rules that hand it the link's packets. */
async function startNfqueueDelay(
  spawnIn: Regions['spawn'],
  link: RegionLink,
  helpers: Helper[],
  log: Logger,
): Promise<void> {
  const [[namespace, dev]] = link.ends;
  // The helper first: with --queue-bypass, packets queued before anyone listens pass undelayed.
  helpers.push(
    await startHelper(
      spawnIn,
      namespace,
      `nfq-delay in ${link.region.name}${link.family === 6 ? ' (IPv6)' : ''}`,
      await nfqDelayBinary(),
      nfqDelayArgs(link),
      log,
    ),
  );
  // Outgoing packets to the helper's first queue, incoming ones to its second.
  for (const [chain, direction, queue] of [
    ['OUTPUT', '-o', link.queue],
    ['INPUT', '-i', link.queue + 1],
  ] as const) {
    await run('ip', [
      'netns',
      'exec',
      namespace,
      link.iptables,
      '-w',
      '10',
      '-A',
      chain,
      direction,
      dev,
      '-j',
      'NFQUEUE',
      '--queue-num',
      String(queue),
      '--queue-bypass',
    ]);
  }
}

/** Relays each forwarded port of this machine's loopback into every region through a Unix socket
 * in the run directory: one relay here, one per region (each added to `helpers` as it starts). */
async function startPortRelays(
  spawnIn: Regions['spawn'],
  runDir: string,
  forwardPorts: number[],
  regions: EmulatedRegion[],
  helpers: Helper[],
  log: Logger,
): Promise<void> {
  const sockets = forwardPorts.map((port) => ({ port, path: relaySocketPath(runDir, port) }));
  const rootSide = sockets.map(({ port, path }): [RelayEnd, RelayEnd] => [{ path }, { port }]);
  const regionSide = sockets.map(({ port, path }): [RelayEnd, RelayEnd] => [{ port }, { path }]);
  helpers.push(
    await startHelper(spawnIn, null, 'port relay on this machine', process.execPath, relayArgs(rootSide), log),
  );
  for (const region of regions) {
    helpers.push(
      await startHelper(
        spawnIn,
        region.namespace,
        `port relay in ${region.name}`,
        process.execPath,
        relayArgs(regionSide),
        log,
      ),
    );
  }
}

/** IPv6 on in a new namespace whatever this machine's defaults (net.core.devconf_inherit_init_net
 * may copy a disable_ipv6 = 1), and no duplicate address detection: the addresses the harness adds
 * (and each link's link-local one) are usable at once. Written to /proc/sys inside the namespace,
 * as `sysctl` (procps) may not be installed. */
const ENABLE_IPV6 =
  'for conf in all default; do echo 0 > /proc/sys/net/ipv6/conf/$conf/disable_ipv6 && echo 0 > /proc/sys/net/ipv6/conf/$conf/accept_dad || exit 1; done';

async function createNamespace(name: string): Promise<void> {
  try {
    await run('ip', ['netns', 'add', name]);
  } catch (err) {
    throw new RegionsUnavailableError(
      `cannot create network namespace ${name} (in a container this needs CAP_SYS_ADMIN, e.g. --privileged): ${(err as Error).message}`,
    );
  }
  await run('ip', ['netns', 'exec', name, 'sh', '-c', ENABLE_IPV6]);
  // Up after IPv6 is on, so loopback has ::1 as well as 127.0.0.1.
  await run('ip', ['-n', name, 'link', 'set', 'dev', 'lo', 'up']);
}
