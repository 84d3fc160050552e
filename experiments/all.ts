import { escalationLiveFiles } from './escalation-live-report.ts';
import { refundAgentFiles } from './refund-agent-report.ts';
import type { ResultFile } from './results-file.ts';

/** Every file in results/, produced from fresh runs of the experiments. */
export async function allResultFiles(): Promise<ResultFile[]> {
  return [...(await refundAgentFiles()), ...(await escalationLiveFiles())];
}
