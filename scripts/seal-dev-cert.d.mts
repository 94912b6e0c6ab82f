export interface SealPair {
  SEAL_PRIVATE_KEY: string;
  SEAL_CERTIFICATE: string;
}
export declare function generateSealPair(options?: {
  keyAlgorithm?: "P-256" | "P-384" | "RSA-2048";
  commonName?: string;
  organization?: string;
}): Promise<SealPair>;
