export * from "./platform";
export * from "./plants";
export * from "./contacts";
export * from "./webhooks";
export * from "./documents";
export * from "./signatures";
export * from "./reputation";
export * from "./properties";
