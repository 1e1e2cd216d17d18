// A peer for tests/integration/redisson_test.cpp: node-redisson (Redisson's own RLock
// scripts, keys, fields, channel and messages through ioredis) on one lock.
//   node peer.js PORT NAME rounds N LOG   N holds, each appending "+" then "-" to LOG
//   node peer.js PORT NAME hold MS         hold MS ms, print "released <epoch ms>" at unlock
//   node peer.js PORT NAME wait            print "ready" once waiting, "acquired <epoch ms>"
// Its waiters can sleep past a wake-up and its wait timer outlives quit(): every run has
// a deadline and exits by itself.
'use strict';
const fs = require('fs');
const { Redisson } = require('node-redisson');

const [port, name, mode, arg1, arg2] = process.argv.slice(2);
setTimeout(() => { console.error('peer: deadline'); process.exit(3); }, 25000).unref();

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const redisson = new Redisson({ redis: { options: { host: '127.0.0.1', port: Number(port) } } });
  const lock = redisson.getLock(name);
  if (mode === 'rounds') {
    for (let i = 0; i < Number(arg1); i++) {
      await lock.lock();
      fs.appendFileSync(arg2, '+\n');
      await sleep(2);
      fs.appendFileSync(arg2, '-\n');
      await lock.unlock();
    }
  } else if (mode === 'hold') {
    await lock.lock();
    console.log('held');
    await sleep(Number(arg1));
    const at = Date.now();
    await lock.unlock();
    console.log('released ' + at);
  } else if (mode === 'wait') {
    const pending = lock.lock();
    console.log('ready');
    await pending;
    console.log('acquired ' + Date.now());
    await lock.unlock();
  }
  process.exit(0);
}
main().catch((e) => { console.error('peer: ' + e); process.exit(2); });
