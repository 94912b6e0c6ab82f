export interface DevOrigin {
  APP_URL: string;
  MCP_SERVER_URL: string;
}
export declare function devOrigin(options?: {
  port?: string;
  args?: string[];
  env?: Record<string, string | undefined>;
  fileVars?: Record<string, string>;
}): DevOrigin;
export declare function devOriginArgs(origin: DevOrigin): string[];
