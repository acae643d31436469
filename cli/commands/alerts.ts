// `probefleet alerts PLAN...`: Prometheus alert rules and Grafana-managed alert rules (file
// provisioning) from plans: their thresholds, their baseline rule, and their values for the fixed
// alerts; the defaults for every other plan (dashboards/src/plan-alerts.ts).
import type { Argv, CommandModule } from 'yargs';
import { stringify } from 'yaml';
import { BadArgumentError } from '../../common/bad-input.js';
import { loadPlanFile } from '../../coordinator/plan-loader.js';
import { grafanaAlertRules, prometheusRules } from '../../dashboards/src/alerts.js';
import { planAlertGroups } from '../../dashboards/src/plan-alerts.js';
import type { ArgsOf } from '../options/args.js';
import { writeRenderedFiles } from './report-files.js';

const options = (y: Argv) =>
  y
    .positional('plans', { type: 'string', array: true, describe: 'plan files (YAML)', demandOption: true })
    .option('prometheus', {
      type: 'string',
      describe: 'write the Prometheus rule file here (- for stdout; the default when neither file is named)',
    })
    .option('grafana', {
      type: 'string',
      describe: 'write Grafana-managed alert rules (provisioning format, apiVersion 1) here (- for stdout)',
    });

const yaml = (value: object) => stringify(JSON.parse(JSON.stringify(value)), { lineWidth: 0 });

export const alertsCommand: CommandModule<object, ArgsOf<typeof options>> = {
  command: 'alerts <plans..>',
  describe:
    "Alert rules from plans: each plan's thresholds, its baseline rule and its values for the fixed alerts (Prometheus rules, Grafana-managed rules)",
  builder: options,
  handler: async (args) => {
    const loaded = await Promise.all((args.plans ?? []).map((file) => loadPlanFile(file)));
    const names = loaded.map((l) => l.plan.name);
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice) throw new BadArgumentError(`two plans are named "${twice}": alerts are per plan name`);
    const groups = planAlertGroups(loaded.map((l) => l.plan));
    const files = {
      prometheus: args.prometheus ?? (args.grafana === undefined ? '-' : undefined),
      grafana: args.grafana,
    };
    await writeRenderedFiles(groups, files, {
      prometheus: (g: typeof groups) => yaml(prometheusRules(g)),
      grafana: (g: typeof groups) => yaml(grafanaAlertRules(g)),
    });
  },
};
