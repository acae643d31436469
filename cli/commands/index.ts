// Every command, in the order `--help` lists them: what the list shows of it (its command and
// description, as its module declares them) and its module, loaded only when the command is given.
// `--help` and `--version` without a command build on this table alone and load no command module;
// test/unit/cli-commands.test.ts holds each entry to its module's own command and description.
import type { CommandModule } from 'yargs';

// biome-ignore lint/suspicious/noExplicitAny: each command module has its own argument types
export type AnyCommand = CommandModule<any, any>;

export interface CommandEntry {
  command: string;
  describe: string;
  load(): Promise<AnyCommand>;
}

export const COMMANDS: Record<string, CommandEntry> = {
  run: {
    command: 'run <plan>',
    describe: "Run a plan and print the report (embedded in this process, or with --redis on the regions' workers)",
    load: async () => (await import('./run.js')).runCommand,
  },
  plan: {
    command: 'plan',
    describe: 'Validate a plan, show the jobs it makes, or print its JSON Schema',
    load: async () => (await import('./plan.js')).planCommand,
  },
  lab: {
    command: 'lab',
    describe: 'Start the lab target: reference servers for every probe, on loopback',
    load: async () => (await import('./lab.js')).labCommand,
  },
  worker: {
    command: 'worker',
    describe: "Run a region worker: take that region's jobs from Redis and measure",
    load: async () => (await import('./worker.js')).workerCommand,
  },
  coordinator: {
    command: 'coordinator',
    describe: 'Run the coordinator: fire schedules, store run reports, serve /metrics and /healthz',
    load: async () => (await import('./coordinator.js')).coordinatorCommand,
  },
  schedule: {
    command: 'schedule',
    describe: 'Run plans on a schedule (needs Redis and a running coordinator)',
    load: async () => (await import('./schedule.js')).scheduleCommand,
  },
  runs: {
    command: 'runs',
    describe: 'List and show run reports stored in Redis',
    load: async () => (await import('./runs.js')).runsCommand,
  },
  regions: {
    command: 'regions',
    describe: 'Emulated regions on this machine (network namespaces with real round-trip times; needs root)',
    load: async () => (await import('./regions.js')).regionsCommand,
  },
  demo: {
    command: 'demo [plan]',
    describe:
      'A fleet on this machine: emulated regions, Redis, a coordinator and a worker per region; runs a plan across the regions, prints the comparison, tears down (root)',
    load: async () => (await import('./demo.js')).demoCommand,
  },
  report: {
    command: 'report <file>',
    describe:
      'Turn a saved run (run --json) into an HTML page with charts, Markdown or CSV; without options, print the report',
    load: async () => (await import('./report.js')).reportCommand,
  },
  compare: {
    command: 'compare [runs..]',
    describe:
      "What changed in a run against its baseline of earlier runs: each quantity's baseline and new value, a verdict and its reason; findings that appeared or disappeared",
    load: async () => (await import('./compare.js')).compareCommand,
  },
  alerts: {
    command: 'alerts <plans..>',
    describe:
      "Alert rules from plans: each plan's thresholds, its baseline rule and its values for the fixed alerts (Prometheus rules, Grafana-managed rules)",
    load: async () => (await import('./alerts.js')).alertsCommand,
  },
};

/** The modules of the commands `argv` names (one, or none); for none, each command as the list
 * shows it, with no module behind it: no command is given, so none of them runs. */
export async function commandsFor(argv: string[]): Promise<AnyCommand[]> {
  const asked = argv.find((arg) => Object.hasOwn(COMMANDS, arg));
  if (asked) return [await COMMANDS[asked]!.load()];
  return Object.values(COMMANDS).map(({ command, describe }) => ({ command, describe, handler: () => {} }));
}
