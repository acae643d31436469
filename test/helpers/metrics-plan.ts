// examples/metrics-lab.yaml (every probe, a finding each, a slow TLS handshake) pointed at a lab
// on free ports, under another name and regions.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { DEFAULT_LAB_PORT, LAB_SERVERS, type Lab } from '../../lab/index.js';
import { REPO_ROOT } from './repo.js';

export async function everyProbePlan(lab: Lab, name: string, regions: string[] = ['local']): Promise<string> {
  const plan = parse(await readFile(path.join(REPO_ROOT, 'examples/metrics-lab.yaml'), 'utf8')) as {
    targets: { url: string }[];
  };
  for (const target of plan.targets) {
    const url = new URL(target.url);
    const spec = LAB_SERVERS.find((s) => DEFAULT_LAB_PORT + s.offset === Number(url.port));
    if (!spec) throw new Error(`examples/metrics-lab.yaml: ${target.url} is not on one of the lab's fixed ports`);
    url.port = String(lab.servers[spec.name].port);
    target.url = url.href;
  }
  return stringify({ ...plan, name, regions });
}
