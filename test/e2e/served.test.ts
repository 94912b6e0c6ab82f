// The e2e suites that need a running server, run as one file against one `npm run dev` on a state of its own
// (helpers/served.ts). One file, so one server and no other file's process writing its SQLite files: a token minted
// by one file's `npm run token` while another file's request wrote the shared state answered that request 500
// (SQLITE_BUSY); one server per file cost a start each. The suites run in turn, each as it was written.
import "./helpers/served";
import "./real-clients.suite";
import "./mcp-clients.suite";
import "./sealed-pdf.suite";
import "./invite-browser.suite";
import "./oauth-browser.suite";
import "./browser.suite";
import "./upload-signing-browser.suite";
import "./signing-session-browser.suite";
import "./template-link-browser.suite";
import "./cimd.suite";
import "./deploy.suite";
import "./cron.suite";
import "./action-plans.suite";
