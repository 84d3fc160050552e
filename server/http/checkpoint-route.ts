import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { CheckpointAnswerSchema, responses } from '../../shared/schemas.ts';
import type { CheckpointAnswer } from '../../shared/api.ts';
import { tokenMatches } from '../config/secrets.ts';
import { readCheckpoint } from '../integrity/checkpoint.ts';
import type { Services } from '../app/services.ts';
import { AppError } from './errors.ts';

// The latest signed checkpoint of the journal's global chain, for mirrors, monitors and anyone
// holding an export against it. It tells the journal's size, so it takes an agent's token or the
// checkpoint token unless `integrity.checkpoint_public` says anyone may read it.

const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]{8,512})$/;

function mayRead(services: Services, request: FastifyRequest): boolean {
  const { integrity, agents } = services.config;
  if (integrity.checkpointPublic) return true;
  const token = BEARER.exec(request.headers.authorization ?? '')?.[1];
  if (token === undefined) return false;
  // Every hash is compared, so the time taken does not say which kind of token matched.
  let matched = integrity.checkpointTokenSha256 !== null && tokenMatches(token, integrity.checkpointTokenSha256);
  for (const agent of agents) matched = tokenMatches(token, agent.tokenSha256) || matched;
  return matched;
}

export const checkpointRoute: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/.well-known/interlock-checkpoint',
    {
      // Asked of no person: an agent's token or the checkpoint token, checked below, or anyone when the config says so.
      config: { access: { public: 'a token of its own (mayRead), or anyone with integrity.checkpoint_public' } },
      schema: {
        tags: ['operators'],
        security: [{ agentToken: [] }, { checkpointToken: [] }],
        operationId: 'getCheckpoint',
        summary: "the latest signed checkpoint of the journal's global chain (C2SP signed note)",
        response: responses({ 200: CheckpointAnswerSchema }, ['unauthorized', 'not_found', 'journal_unavailable']),
      },
    },
    async (request): Promise<CheckpointAnswer> => {
      if (!mayRead(services, request)) throw new AppError('unauthorized', 'send Authorization: Bearer <agent token or checkpoint token>');
      const latest = await services.checkpoints.latest();
      if (latest === null) throw new AppError('not_found', 'no checkpoint has been signed yet');
      const read = readCheckpoint(latest.note, { publicKeyPem: services.signingKey.publicKeyPem, keyId: services.signingKey.keyId });
      // Start-up refused a store whose checkpoint did not verify; one that stopped verifying since is damage.
      if (!read.ok) throw new AppError('internal_error', 'the latest checkpoint does not verify with the receipt key');
      return {
        origin: read.checkpoint.origin,
        size: read.checkpoint.size,
        head: read.checkpoint.head,
        epoch: latest.epoch,
        signed_at_ms: latest.signedAtMs,
        key_id: services.signingKey.keyId,
        note: latest.note,
      };
    },
  );
};
