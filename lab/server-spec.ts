// The shape every lab server has: one file per server under lab/servers/, listed in lab/index.ts.
import type net from 'node:net';
import type { LAB_ROLES, LabRole } from '../contracts/lab-roles.js';
import type { Logger } from '../common/log.js';
import type { KeyAndCert, LabCa } from './certs.js';

/** The names the lab's own certificates are always valid for (the listen address is added). */
export const LAB_CERT_HOSTS = ['localhost', '127.0.0.1', '::1'];

export interface LabContext {
  host: string;
  /** Further addresses the lab answers at (LabOptions.alsoAt); when there are any, servers listen on `::`. */
  alsoAt: string[];
  ca: LabCa;
  /** Names and addresses the lab's certificates are issued for: LAB_CERT_HOSTS and the addresses it answers at. */
  certHosts: string[];
  /** The lab CA's certificate for `localhost`, 127.0.0.1, ::1 and the listen address. */
  serverCert: KeyAndCert;
  log: Logger;
}

export interface LabServerSpec<R extends LabRole = LabRole> {
  /** The server's role: its name in `probefleet lab` output, in `lab.url(name)` and in plans' `lab:ROLE/path`. */
  name: R;
  /** Port = base port + offset when a base port is given (`probefleet lab --port`, `run --lab-at`). */
  offset: number;
  scheme: (typeof LAB_ROLES)[R];
  /** What it speaks, where that is not its scheme (the dns server: `dns`, for its URL in `probefleet lab`'s listing). */
  protocol?: string;
  description: string;
  /** Creates the server, not yet listening. */
  create(ctx: LabContext): net.Server | Promise<net.Server>;
  /** Finishes setting up a server once it listens; the lab counts as started when it resolves. */
  ready?(server: net.Server, ctx: LabContext): Promise<void>;
}
