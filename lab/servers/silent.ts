import { handWrittenServer } from '../route-helpers.js';
import type { LabServerSpec } from '../server-spec.js';

export const silentServer: LabServerSpec<'silent'> = {
  name: 'silent',
  offset: 22,
  scheme: 'http',
  description: 'accepts connections, reads the request and never answers (the lab closes them when it stops)',
  create: () => handWrittenServer(() => {}),
};
