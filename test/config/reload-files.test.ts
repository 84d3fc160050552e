import { describe, expect, it } from 'vitest';
import { isInterlockServerCommand } from '../../server/app/reload-files.ts';

// `npm run reload` signals the process its data folder names only when it is an Interlock server:
// a pid file left by a server that died, whose number went to another program, must not have that
// program signalled. Production runs the compiled server, the sources run through tsx.

describe('isInterlockServerCommand', () => {
  it.each<[string, boolean]>([
    ['node /opt/interlock/node_modules/.bin/tsx server/main.ts', true],
    ['/usr/bin/node --enable-source-maps dist/server/main.js', true],
    ['node --enable-source-maps /opt/interlock/dist/server/main.js', true],
    ['/usr/sbin/sshd -D', false],
    ['node other/app.js', false],
    ['node /srv/another-app/dist/main.js', false],
    ['node dist/server/main.json', false],
  ])('%s: %s', (command, expected) => {
    expect(isInterlockServerCommand(command)).toBe(expected);
  });
});
