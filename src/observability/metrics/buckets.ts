/** Seconds; 1 s is the latency SLO's threshold (deploy/prometheus/alerts.yaml), so it must stay a bucket. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20];
