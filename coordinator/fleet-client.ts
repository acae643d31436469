// A fleet's Redis without BullMQ: its connection (fleet-connection.ts) with the report store, for
// what reads or writes stored runs itself (`runs`, `compare --redis`), so that those commands do
// not load BullMQ. The Fleet (fleet.ts) is this plus the queues.
import { DEFAULT_RETENTION, type RetentionSettings } from '../contracts/retention.js';
import { openFleetConnection, type FleetConnection, type FleetConnectionOptions } from './fleet-connection.js';
import { ReportStore } from './report-store.js';

export interface FleetClientOptions extends FleetConnectionOptions {
  /** What is kept and for how long: reports here; jobs where they finish. */
  retention?: RetentionSettings;
}

export interface FleetClient extends FleetConnection {
  retention: RetentionSettings;
  store: ReportStore;
}

export function openFleetClient(options: FleetClientOptions): FleetClient {
  const connection = openFleetConnection(options);
  const retention = options.retention ?? DEFAULT_RETENTION;
  return { ...connection, retention, store: new ReportStore(connection.client, connection.prefix, retention.reports) };
}
