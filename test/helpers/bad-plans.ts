// The corpus of malformed plans, test/fixtures/plans/bad/: each file states what `plan validate`
// must print for it in its header, one `# expect: LINE:COL FIELD: MESSAGE` line per problem
// (`{probes}` for the list of probe kinds); a problem in a target file the plan reads
// (target-files/) as `# expect: target-files/x.json:LINE:COL ...`.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { PROBE_KINDS } from '../../contracts/probes/index.js';
import { REPO_ROOT } from './repo.js';

/** Relative to the repository root, as the CLI is run there and messages name files as given. */
export const BAD_PLANS_DIR = 'test/fixtures/plans/bad';

export interface BadPlan {
  /** `test/fixtures/plans/bad/<name>.yaml` */
  file: string;
  /** The lines `plan validate` prints to stderr, in order: `FILE:LINE:COL: FIELD: MESSAGE`. */
  expected: string[];
}

/** Stands for the list of probe kinds in an expected message, so a new probe edits no fixture. */
const PROBE_LIST = '{probes}';

export async function badPlans(): Promise<BadPlan[]> {
  const names = (await readdir(path.join(REPO_ROOT, BAD_PLANS_DIR))).filter((f) => f.endsWith('.yaml')).sort();
  return Promise.all(
    names.map(async (name) => {
      const file = `${BAD_PLANS_DIR}/${name}`;
      const text = await readFile(path.join(REPO_ROOT, file), 'utf8');
      const expected = [...text.matchAll(/^# expect: (?:(\S+?\.(?:json|ya?ml)):)?(\d+:\d+) (.*)$/gm)].map(
        ([, other, at, rest]) =>
          `${other ? `${BAD_PLANS_DIR}/${other}` : file}:${at}: ${rest.replaceAll(PROBE_LIST, PROBE_KINDS.join(', '))}`,
      );
      return { file, expected };
    }),
  );
}
