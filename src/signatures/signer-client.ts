import type { Env } from "../env";
import type { EnvelopeSigner } from "./envelope-signer";

/**
 * The object of one envelope, typed (env.ts binds the namespace bare). Routes, sweeps and tests reach the object
 * through here; only index.ts names the class module.
 */
export function envelopeSigner(env: Env, envelopeId: string): DurableObjectStub<EnvelopeSigner> {
  const namespace = env.ENVELOPE_SIGNER as DurableObjectNamespace<EnvelopeSigner>;
  return namespace.get(namespace.idFromName(envelopeId));
}
