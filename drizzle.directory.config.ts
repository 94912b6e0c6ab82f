import { defineConfig } from "drizzle-kit";

/** The directory's migrations (the `DB` binding): organizations, members, sessions, OAuth, placement (issue 24). */
export default defineConfig({
  dialect: "sqlite",
  schema: ["./src/db/members.ts", "./src/db/directory.ts", "./src/db/oauth.ts"],
  out: "./migrations/directory",
  casing: "snake_case",
});
