// wrangler.toml as wrangler itself reads it (its own parser and environment rules), typed for what the deploy tests
// look at: wrangler's bundled types leave the configuration untyped.
import { unstable_readConfig as readConfig } from "wrangler";

export interface WranglerConfig {
  name: string;
  vars: Record<string, string>;
  secrets?: { required?: string[] };
  triggers: { crons?: string[] };
  d1_databases: Array<{ binding: string; database_name: string; database_id?: string; migrations_dir: string }>;
  durable_objects: { bindings: Array<{ name: string; class_name: string }> };
  queues: {
    producers?: Array<{ binding: string; queue: string }>;
    consumers?: Array<{ queue: string; dead_letter_queue?: string }>;
  };
  r2_buckets: Array<{ binding: string; bucket_name: string }>;
  vectorize: Array<{ binding: string; index_name: string }>;
}

/** The top level of wrangler.toml (in `cwd`), or one of its environments. */
export const wranglerConfig = (env?: string): WranglerConfig => readConfig({ config: "wrangler.toml", env }) as unknown as WranglerConfig;
