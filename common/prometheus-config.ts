// The Prometheus configuration for what probefleet exports. Runtime code (the demo) writes it,
// and so does the dashboards generator (dashboards/prometheus/), so it lives apart from the
// generator and its build-time dependencies.

export interface PrometheusTargets {
  pushgateway: string[];
  coordinator: string[];
  workers: string[];
  rules: string[];
  /** Where firing alerts go (host:port); none: alerts are only evaluated. */
  alertmanagers?: string[];
  scrapeInterval: string;
  evaluationInterval: string;
}

/** A Prometheus configuration that scrapes what probefleet exports; the Pushgateway with honor_labels, so pushed `job`, `instance` and `region` stay. */
export function prometheusConfig(t: PrometheusTargets): object {
  return {
    global: { scrape_interval: t.scrapeInterval, evaluation_interval: t.evaluationInterval },
    rule_files: t.rules,
    ...(t.alertmanagers ? { alerting: { alertmanagers: [{ static_configs: [{ targets: t.alertmanagers }] }] } } : {}),
    scrape_configs: [
      { job_name: 'pushgateway', honor_labels: true, static_configs: [{ targets: t.pushgateway }] },
      { job_name: 'probefleet-coordinator', static_configs: [{ targets: t.coordinator }] },
      { job_name: 'probefleet-workers', static_configs: [{ targets: t.workers }] },
    ],
  };
}
