// The fault table (test/helpers/fault-table.ts), lane 1 of 4: see test/helpers/fault-runner.ts.
import { faultLane } from "../helpers/fault-runner";

faultLane(1, 4);
