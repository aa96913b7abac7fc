// A driver for Apache RocketMQ's official 5.x Node.js client (npm rocketmq-client-nodejs@1.0.8, installed by
// scripts/v5-node-client.sh), run by tests/interop/v5/test_node_client.py, one process per scenario:
//
//   node nodeclient.js ENDPOINT produce TOPIC COUNT          send COUNT messages (tag, keys, a property)
//   node nodeclient.js ENDPOINT simple GROUP TOPIC COUNT     receive COUNT, ack each, then one empty receive
//
// Each result is one JSON line on stdout; exit 0 only when the scenario ran to its end. Every wait is bounded.
'use strict';

const path = require('path');
const dir = process.env.ROCKETQ_NODE5_DIR || path.join(require('os').homedir(), '.cache', 'rocketq', 'node5');
const { Producer, SimpleConsumer } = require(path.join(dir, 'node_modules', 'rocketmq-client-nodejs'));

const WAIT_MS = Number(process.env.ROCKETQ_V5_WAIT || '60') * 1000;
const quiet = { info() {}, warn() {}, debug() {}, trace() {}, error(...a) { console.error(...a); } };

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

async function produce(endpoints, topic, count) {
  const producer = new Producer({ endpoints, topics: [topic], logger: quiet });
  await producer.startup();
  try {
    for (let i = 0; i < count; i++) {
      const receipt = await producer.send({
        topic, tag: 'TagN', keys: [`key-${i}`], properties: new Map([['k', `v${i}`]]),
        body: Buffer.from(`node-${i}`),
      });
      out({ body: `node-${i}`, message_id: receipt.messageId });
    }
  } finally {
    await producer.shutdown();
  }
}

async function simple(endpoints, group, topic, count) {
  const consumer = new SimpleConsumer({
    endpoints, consumerGroup: group, subscriptions: new Map([[topic, '*']]), awaitDuration: 5000, logger: quiet,  // the proxy's rule: a long poll of at least 5 s fits the deadline
  });
  await consumer.startup();
  try {
    const deadline = Date.now() + WAIT_MS;
    let seen = 0;
    while (seen < count && Date.now() < deadline) {
      for (const m of await consumer.receive(16, 15000)) {
        out({ event: 'acked', body: m.body.toString(), attempt: m.deliveryAttempt, tag: m.tag, keys: m.keys,
              properties: Object.fromEntries(m.properties || []) });
        await consumer.ack(m);
        seen++;
      }
    }
    out({ event: 'after', count: (await consumer.receive(16, 15000)).length });
  } finally {
    await consumer.shutdown();
  }
}

async function main() {
  const [endpoints, command, ...rest] = process.argv.slice(2);
  if (command === 'produce') await produce(endpoints, rest[0], Number(rest[1]));
  else if (command === 'simple') await simple(endpoints, rest[0], rest[1], Number(rest[2]));
  else throw new Error(`unknown command ${command}`);
}

main().then(() => process.exit(0), (err) => { console.error(err && err.stack || err); process.exit(1); });
