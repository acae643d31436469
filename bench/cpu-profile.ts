// Reads a V8 .cpuprofile (what node --cpu-prof writes) and lists where the time went: self time per
// function, as a share of the whole profile, so a missed target comes with its explanation.
import { readFile } from 'node:fs/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileLine {
  /** `functionName file:line`; `name (native)` for built-ins; (idle), (program), (garbage collector) as V8 names them. */
  where: string;
  selfPercent: number;
}

function describe(frame: ProfileNode['callFrame']): string {
  const name = frame.functionName || '(anonymous)';
  if (!frame.url) return name.startsWith('(') ? name : `${name} (native)`;
  const file = frame.url
    .replace(/^file:\/\//, '')
    .split('/node_modules/')
    .pop()!
    .split('/')
    .slice(-3)
    .join('/');
  return `${name} ${file}:${frame.lineNumber + 1}`;
}

/** The top `count` entries by self time of a profile. */
export async function summarizeCpuProfile(file: string, count: number): Promise<ProfileLine[]> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
  const timeOf = new Map<number, number>();
  // A sample lasts until the next one (as DevTools counts): timeDeltas[0] is the profiler's own start.
  profile.samples.forEach((id, i) => {
    timeOf.set(id, (timeOf.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
  });
  const byPlace = new Map<string, number>();
  let total = 0;
  for (const node of profile.nodes) {
    const time = timeOf.get(node.id) ?? 0;
    total += time;
    const where = describe(node.callFrame);
    byPlace.set(where, (byPlace.get(where) ?? 0) + time);
  }
  return [...byPlace.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([where, time]) => ({ where, selfPercent: (100 * time) / total }));
}
