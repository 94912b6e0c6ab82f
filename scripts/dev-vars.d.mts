export declare const DEV_VARS_EXAMPLE: URL;
export declare function readDevVars(file?: URL): Record<string, string>;
export declare function readLocalDevVars(): Record<string, string>;
export declare function ensureDevVars(): Promise<void>;
export declare function sealBindings(): Promise<{ SEAL_PRIVATE_KEY: string; SEAL_CERTIFICATE: string }>;
