// The coordinator side's connections to a fleet's Redis: the runs queue, a flow producer, a
// client of its own and the report store, all under one prefix. One object, so commands and
// the coordinator service open and close them the same way. What needs no queue opens, without
// BullMQ, the client with the report store (fleet-client.ts) or the client alone (fleet-connection.ts).
import { FlowProducer, Queue, type ConnectionOptions } from 'bullmq';
import { regionQueueName, RUNS_QUEUE, SUBMISSIONS_QUEUE } from '../contracts/queues.js';
import { openFleetClient, type FleetClient, type FleetClientOptions } from './fleet-client.js';
import { closeFleetConnections } from './fleet-connection.js';

/**
 * Events each queue keeps in its BullMQ event stream. Every completed batch's event carries its
 * return value (at most one probe result: worker/run-results.ts), and nothing of ours reads the
 * stream: kept short, so it is not a second, unbounded copy of the results (BullMQ's default is
 * 10,000 per queue; Redis trims by whole nodes of 100, so 100–200 stay).
 */
export const QUEUE_EVENTS_KEPT = 100;

export interface FleetOptions extends FleetClientOptions {
  /** Signs the jobs and schedules this side adds (common/job-signature.ts); unsigned without it. */
  jobKey?: string;
}

export interface Fleet extends FleetClient {
  runs: Queue;
  flows: FlowProducer;
  jobKey?: string;
  /** A region's queue (opened on first use, closed with the fleet). */
  regionQueue(region: string): Queue;
  /** The queue of the runs' submission gates (opened on first use, closed with the fleet). */
  submissionsQueue(): Queue;
}

export function openFleet(options: FleetOptions): Fleet {
  const fleetClient = openFleetClient(options);
  const { client, prefix } = fleetClient;
  // Shared, not copied: BullMQ takes a Cluster only as a client, and leaves a client it was given
  // open (closed below). Every key is under the prefix's hash tag, so a Cluster sends a queue's
  // multi-key commands to one node.
  const connection: ConnectionOptions = client;
  const queueOptions = { connection, prefix, streams: { events: { maxLen: QUEUE_EVENTS_KEPT } } };
  /** Queues opened on first use, by name. */
  const queues = new Map<string, Queue>();
  const queueNamed = (name: string) => {
    let queue = queues.get(name);
    if (!queue) {
      queue = new Queue(name, queueOptions);
      queue.on('error', () => {});
      queues.set(name, queue);
    }
    return queue;
  };
  const runs = new Queue(RUNS_QUEUE, queueOptions);
  const flows = new FlowProducer({ connection, prefix });
  // BullMQ's own connections report the same outage as the client: a listener each, logged once.
  runs.on('error', () => {});
  flows.on('error', () => {});
  return {
    ...fleetClient,
    runs,
    flows,
    ...(options.jobKey ? { jobKey: options.jobKey } : {}),
    regionQueue: (region) => queueNamed(regionQueueName(region)),
    submissionsQueue: () => queueNamed(SUBMISSIONS_QUEUE),
    close: () => closeFleetConnections(client, [runs, flows, ...queues.values()]),
  };
}
