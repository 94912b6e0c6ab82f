import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";

/**
 * One object per envelope id serializes every signer action on that envelope (DESIGN.md "Serialization").
 * The binding exists from the platform issue on; the signing state machine lands with the signatures issue, and
 * until then this class has no methods, so nothing can call into a half-built flow.
 */
export class EnvelopeSigner extends DurableObject<Env> {}
