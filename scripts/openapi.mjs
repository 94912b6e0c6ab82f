// The OpenAPI document, built in Node from the app's own route declarations: esbuild bundles src/app.ts (the same
// code the Worker serves at /openapi.json) and the app answers GET /openapi.json without touching any binding.
//   node scripts/openapi.mjs [out.json]     writes the document (stdout without a path)
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));

export async function buildOpenApiDocument() {
  const bundle = await build({
    entryPoints: [`${root}src/app.ts`],
    bundle: true,
    platform: "node",
    format: "esm",
    write: false,
    logLevel: "error",
    // Durable Object classes extend workerd's DurableObject; building the document never instantiates one.
    plugins: [
      {
        name: "workerd-stubs",
        setup(b) {
          b.onResolve({ filter: /^cloudflare:/ }, (args) => ({ path: args.path, namespace: "workerd-stub" }));
          b.onLoad({ filter: /.*/, namespace: "workerd-stub" }, () => ({ contents: "export class DurableObject {}", loader: "js" }));
        },
      },
    ],
  });
  const { createApp } = await import(`data:text/javascript;base64,${Buffer.from(bundle.outputFiles[0].text).toString("base64")}`);
  // Only what the platform middleware reads on the way to the document: a D1 binding that opens sessions.
  const env = { DB: { withSession: () => ({ getBookmark: () => null }) }, ENVIRONMENT: "development" };
  const res = await createApp().request("/openapi.json", {}, env);
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  return res.json();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const doc = `${JSON.stringify(await buildOpenApiDocument(), null, 2)}\n`;
  if (process.argv[2]) writeFileSync(process.argv[2], doc);
  else process.stdout.write(doc);
}
