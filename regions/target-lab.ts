// The lab target on the target host of emulated regions: lab-entry.js inside the target
// namespace, listening on TARGET_ADDRESS with the lab's usual ports (the namespace has its own
// port space, so they never collide with a lab on this machine's loopback).
import { fileURLToPath } from 'node:url';
import type { LabAddress } from '../contracts/lab-roles.js';
import { DEFAULT_LAB_PORT, labAddressAt, type LabServerName } from '../lab/index.js';
import type { Regions } from './harness.js';

export interface TargetLab {
  /** URL of each lab server, as seen from every region. */
  servers: Record<LabServerName, string>;
  /** The lab CA's certificate (a file: namespaces share the filesystem), for plans' `tls.ca`. */
  caFile: string;
  /** Where plans' `lab:ROLE/path` targets go, from every region. */
  address: LabAddress;
  /** The same as `run --lab-at` takes it: HOST:PORT. */
  at: string;
  close(): Promise<void>;
}

const LAB_ENTRY = fileURLToPath(new URL('./lab-entry.js', import.meta.url));

export async function startTargetLab(regions: Regions, basePort = DEFAULT_LAB_PORT): Promise<TargetLab> {
  const child = regions.spawn(
    regions.target.namespace,
    process.execPath,
    [LAB_ENTRY, regions.target.address, String(basePort)],
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

  return {
    ...started,
    address: labAddressAt(regions.target.address, basePort),
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
