export declare const DEV_VARS_EXAMPLE: URL;
export declare function readDevVars(): Record<string, string>;
export declare function ensureDevVars(): void;
