// The lab target on the target host of emulated regions: lab-entry.js inside the target
// namespace, listening on TARGET_ADDRESS and TARGET_ADDRESS_V6 with the lab's usual ports (the
// namespace has its own port space, so they never collide with a lab on this machine's loopback).
import { fileURLToPath } from 'node:url';
import type { LabAddress } from '../contracts/lab-roles.js';
import { DEFAULT_LAB_PORT, labAddressAt } from '../contracts/lab-roles.js';
import type { LabServerName } from '../lab/index.js';
import type { Regions } from './harness.js';

export interface TargetLab {
  /** URL of each lab server, as seen from every region. */
  servers: Record<LabServerName, string>;
  /** The same servers at the target's IPv6 address (`http://[fd77::1]:18170`). */
  serversV6: Record<LabServerName, string>;
  /** The lab CA's certificate (a file: namespaces share the filesystem), for plans' `tls.ca`. */
  caFile: string;
  /** Where plans' `lab:ROLE/path` targets go, from every region. */
  address: LabAddress;
  /** The same over IPv6. */
  addressV6: LabAddress;
  /** The same as `run --lab-at` takes it: HOST:PORT. */
  at: string;
  close(): Promise<void>;
}

const LAB_ENTRY = fileURLToPath(new URL('./lab-entry.js', import.meta.url));

export async function startTargetLab(regions: Regions, basePort = DEFAULT_LAB_PORT): Promise<TargetLab> {
  const child = regions.spawn(
    regions.target.namespace,
    process.execPath,
    [LAB_ENTRY, regions.target.address, String(basePort), regions.target.addressV6],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
      realtime: true,
    },
  );
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const started = await new Promise<{ servers: Record<LabServerName, string>; caFile: string }>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error('the lab target did not start within 20 s')), 20_000);
    const fail = (err: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${err.message}${stderr ? `: ${stderr.trim()}` : ''}`));
    };
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const newline = out.indexOf('\n');
      if (newline < 0) return;
      clearTimeout(timer);
      try {
        resolve(JSON.parse(out.slice(0, newline)));
      } catch (err) {
        fail(err as Error);
      }
    });
    child.once('exit', (code, signal) =>
      fail(new Error(`the lab target exited (${signal ?? `code ${code}`}) while starting`)),
    );
  });

  const v4Host = `//${regions.target.address}:`;
  const v6Host = `//[${regions.target.addressV6}]:`;
  return {
    ...started,
    serversV6: Object.fromEntries(
      Object.entries(started.servers).map(([name, url]) => [name, url.replace(v4Host, v6Host)]),
    ) as Record<LabServerName, string>,
    address: labAddressAt(regions.target.address, basePort),
    addressV6: labAddressAt(regions.target.addressV6, basePort),
    at: `${regions.target.address}:${basePort}`,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin!.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
