// node-redlock 4.2.0 acquiring and releasing one lock ROUNDS times on the members named by
// their ports (the same members as rlock's redis-quorum:// URL), in one process: prints the
// median and p90 of an acquisition (ms), which is one round trip to every member, without
// any process start.
// Usage: node acquire.js ROUNDS PORT1,PORT2,PORT3[,...]
const Redis = require('ioredis');
const Redlock = require('redlock');

async function main() {
  const rounds = Number(process.argv[2]);
  const ports = process.argv[3].split(',').map(Number);
  const clients = ports.map((port) => new Redis({ host: '127.0.0.1', port }));
  const redlock = new Redlock(clients, { retryCount: 0, driftFactor: 0.01 });
  const took = [];
  for (let i = 0; i < rounds; i++) {
    const start = process.hrtime.bigint();
    const lock = await redlock.lock('redlock-bench', 30000);
    took.push(Number(process.hrtime.bigint() - start) / 1e6);
    await lock.unlock();
  }
  took.sort((a, b) => a - b);
  const at = (q) => took[Math.min(took.length - 1, Math.floor(q * took.length))].toFixed(3);
  console.log(`${at(0.5)} ${at(0.9)}`);
  clients.forEach((c) => c.disconnect());
}
main().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
