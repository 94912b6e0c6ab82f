// A person's personal data: erased (erase.ts, DELETE /v1/contacts/{id}?erase=true, and the cron that finishes an
// erasure that stopped), or handed over (access.ts, GET /v1/contacts/{id}/export) from the same lookups.
export { personalData } from "./access";
export { eraseContact, resumeErasures } from "./erase";
