import http from 'node:http';
import { trickle } from '../drain-routes.js';
import type { LabServerSpec } from '../server-spec.js';

/** 64 KiB, 16 bytes every 100 ms: about 7 minutes for the whole body. */
const SLOW_TRICKLE = '/trickle?bytes=65536&chunk=16&intervalMs=100';

export const trickleServer: LabServerSpec<'trickle'> = {
  name: 'trickle',
  offset: 23,
  scheme: 'http',
  description:
    'HTTP/1.1 whose body comes 16 bytes every 100 ms (64 KiB in 7 minutes): no gap is long, the whole is past any time bound',
  create: () =>
    http.createServer((req, res) => {
      req.url = SLOW_TRICKLE;
      trickle(req, res);
    }),
};
