export * from "./platform";
export * from "./plants";
