// The fault table (test/helpers/fault-table.ts), lane 4 of 4: see test/helpers/fault-runner.ts.
import { faultLane } from "../helpers/fault-runner";

faultLane(4, 4);
