// One report section per probe kind; the mapped type makes a missing one a compile error.
import type { ProbeKind } from '../../../contracts/probes/index.js';
import type { ResultOf } from '../../../contracts/result.js';
import { loadSection } from './load.js';
import { reuseSection } from './reuse.js';

export const REPORT_SECTIONS: { [K in ProbeKind]: (results: ResultOf<K>[]) => string } = {
  reuse: reuseSection,
  load: loadSection,
};
