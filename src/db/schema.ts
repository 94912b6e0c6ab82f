export * from "./platform";
export * from "./plants";
export * from "./webhooks";
