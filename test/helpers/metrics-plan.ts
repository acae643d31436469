// examples/metrics-lab.yaml (every probe, a finding each, a slow TLS handshake) with its lab
// targets at a lab on free ports, under another name and regions.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { resolveLabUrl } from '../../contracts/lab-roles.js';
import type { Lab } from '../../lab/index.js';
import { REPO_ROOT } from './repo.js';

export async function everyProbePlan(lab: Lab, name: string, regions: string[] = ['local']): Promise<string> {
  const plan = parse(await readFile(path.join(REPO_ROOT, 'examples/metrics-lab.yaml'), 'utf8')) as {
    targets: { url: string }[];
  };
  for (const target of plan.targets) target.url = resolveLabUrl(target.url, lab.address);
  return stringify({ ...plan, name, regions });
}
