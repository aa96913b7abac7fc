import com.alibaba.fastjson.JSONObject;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.client.trace.TraceBean;
import org.apache.rocketmq.client.trace.TraceContext;
import org.apache.rocketmq.client.trace.TraceDataEncoder;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Transactions, the lite pull consumer, message trace and request-reply. */
final class MoreScenarios {
    private MoreScenarios() {
    }

    static void run(String name, RocketqDriver.Opts o) throws Exception {
        if ("transaction".equals(name)) {
            transaction(o);
        } else if ("lite-pull".equals(name)) {
            litePull(o);
        } else if ("trace".equals(name)) {
            trace(o);
        } else if ("request".equals(name)) {
            request(o);
        } else if ("acl".equals(name)) {
            AclScenarios.run(o);
        } else if ("failover".equals(name)) {
            FailoverScenario.run(o);
        } else {
            throw new IllegalArgumentException("unknown scenario " + name);
        }
    }

    /** Reads every queue of ``topic`` from its first offset until ``want`` distinct keys were seen. */
    static boolean readTopic(RocketqDriver.Opts o, String topic, String group, String event, int want)
        throws Exception {
        DefaultLitePullConsumer c = Clients.litePull(o, group, group);
        c.start();
        Collection<MessageQueue> mqs = Clients.queues(o, c, topic);
        c.assign(mqs);
        for (MessageQueue mq : mqs) {
            c.seekToBegin(mq);
        }
        Out.Collector got = new Out.Collector();
        while (got.unique() < want && o.remainingMs() > 0) {
            for (MessageExt m : c.poll(Math.min(500, Math.max(1, o.remainingMs())))) {
                Out.emit(Out.received(event, group, m));
                got.add(m.getKeys());
            }
        }
        c.shutdown();
        return got.unique() >= want;
    }

    /**
     * 4. --count transactions of each kind: commit and rollback decided at once, check-commit and
     * check-rollback answered UNKNOW first and decided when the broker checks back.
     */
    static void transaction(RocketqDriver.Opts o) throws Exception {
        String topic = o.topic();
        int n = o.count();
        final Out.Collector checked = new Out.Collector();
        TransactionMQProducer p = new TransactionMQProducer(o.group() + "-producer", Clients.aclHook(o));
        p.setTransactionListener(new TransactionListener() {
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                String kind = msg.getUserProperty("kind");
                if ("commit".equals(kind)) {
                    return LocalTransactionState.COMMIT_MESSAGE;
                }
                return "rollback".equals(kind) ? LocalTransactionState.ROLLBACK_MESSAGE : LocalTransactionState.UNKNOW;
            }

            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                JSONObject line = Out.received("check", "producer", msg);
                line.put("transactionId", msg.getTransactionId());
                Out.emit(line);
                checked.add(msg.getKeys());
                String kind = msg.getUserProperty("kind");
                if ("check-commit".equals(kind)) {
                    return LocalTransactionState.COMMIT_MESSAGE;
                }
                return "check-rollback".equals(kind) ? LocalTransactionState.ROLLBACK_MESSAGE
                    : LocalTransactionState.UNKNOW;
            }
        });
        Clients.start(o, p, o.group() + "-producer");
        for (String kind : new String[] {"commit", "rollback", "check-commit", "check-rollback"}) {
            for (int i = 0; i < n; i++) {
                Message m = Clients.message(topic, "TagT", "tx-" + kind + "-" + i, kind + " " + i, "kind", kind);
                TransactionSendResult r = p.sendMessageInTransaction(m, null);
                JSONObject line = Out.sent("transaction", m, r);
                line.put("localState", r.getLocalTransactionState().name());
                line.put("transactionId", r.getTransactionId());
                Out.emit(line);
            }
        }
        boolean consumed = Scenarios.consumeAll(o, topic, o.group(), 2 * n, false);
        boolean allChecked = checked.await(2 * n, o);
        Clients.linger(o);
        Out.emit(Out.done("transaction", consumed && allChecked));
    }

    /**
     * 6. subscribe mode: read --count, commitSync, restart, read only what was sent since; assign mode:
     * seekToBegin, seek one queue to offset 1, commitSync, restart, read only what was sent since.
     */
    static void litePull(RocketqDriver.Opts o) throws Exception {
        String topic = o.topic();
        int n = o.count();
        DefaultMQProducer p = Clients.producer(o, o.group() + "-producer", false);
        sendBatchOf(p, topic, "first", n);

        DefaultLitePullConsumer sub1 = subscribed(o);
        boolean ok = Clients.pollUntil(o, sub1, "subscribe-1", new Out.Collector(), n, 0, Clients.BY_KEYS).size() >= n;
        sub1.commitSync();
        reportCommitted(sub1, "subscribe-1");
        sub1.shutdown();
        sendBatchOf(p, topic, "second", n);
        DefaultLitePullConsumer sub2 = subscribed(o);
        Out.Collector got2 = new Out.Collector();
        Clients.pollUntil(o, sub2, "subscribe-2", got2, n, o.lingerMs(), Clients.BY_KEYS);
        ok &= got2.unique() >= n;
        sub2.shutdown();

        String group = o.group() + "-assign";
        DefaultLitePullConsumer a1 = Clients.litePull(o, group, "assign-1");
        a1.setAutoCommit(false);
        a1.start();
        Collection<MessageQueue> mqs = Clients.queues(o, a1, topic);
        a1.assign(mqs);
        for (MessageQueue mq : mqs) {
            a1.seekToBegin(mq);
        }
        List<MessageExt> all = Clients.pollUntil(o, a1, "assign-1", new Out.Collector(), 2 * n, 0, Clients.BY_KEYS);
        ok &= all.size() >= 2 * n;
        // Seek the fullest queue back to offset 1: exactly its offsets 1.. come again.
        Map<Integer, Integer> perQueue = new HashMap<Integer, Integer>();
        for (MessageExt m : all) {
            Integer c = perQueue.get(m.getQueueId());
            perQueue.put(m.getQueueId(), c == null ? 1 : c + 1);
        }
        MessageQueue fullest = null;
        for (MessageQueue mq : mqs) {
            Integer c = perQueue.get(mq.getQueueId());
            if (c != null && (fullest == null || c > perQueue.get(fullest.getQueueId()))) {
                fullest = mq;
            }
        }
        if (fullest != null) {
            JSONObject line = Out.event("seek");
            line.put("queueId", fullest.getQueueId());
            line.put("offset", 1);
            Out.emit(line);
            a1.seek(fullest, 1);
            int want = perQueue.get(fullest.getQueueId()) - 1;
            Clients.pollUntil(o, a1, "seek", new Out.Collector(), want, o.lingerMs(), Clients.BY_KEYS);
        }
        a1.commitSync();
        reportCommitted(a1, "assign-1");
        a1.shutdown();
        sendBatchOf(p, topic, "third", n);
        DefaultLitePullConsumer a2 = Clients.litePull(o, group, "assign-2");
        a2.setAutoCommit(false);
        a2.start();
        a2.assign(mqs);
        Out.Collector got3 = new Out.Collector();
        Clients.pollUntil(o, a2, "assign-2", got3, n, o.lingerMs(), Clients.BY_KEYS);
        ok &= got3.unique() >= n;
        a2.shutdown();
        Out.emit(Out.done("lite-pull", ok));
    }

    private static DefaultLitePullConsumer subscribed(RocketqDriver.Opts o) throws Exception {
        DefaultLitePullConsumer c = Clients.litePull(o, o.group(), "subscriber");
        c.setAutoCommit(false);
        c.subscribe(o.topic(), "*");
        c.start();
        return c;
    }

    private static void sendBatchOf(DefaultMQProducer p, String topic, String phase, int n) throws Exception {
        for (int i = 0; i < n; i++) {
            Message m = Clients.message(topic, "TagL", phase + "-" + i, phase + " " + i, "phase", phase);
            Out.emit(Out.sent(phase, m, p.send(m)));
        }
    }

    private static void reportCommitted(DefaultLitePullConsumer c, String name) throws Exception {
        for (MessageQueue mq : c.assignment()) {
            JSONObject line = Out.event("committed");
            line.put("consumer", name);
            line.put("queueId", mq.getQueueId());
            line.put("offset", c.committed(mq));
            Out.emit(line);
        }
    }

    /**
     * 8. producer and consumer with enableMsgTrace: --count messages sent and consumed, then the trace
     * topic is read back and each decoded trace bean reported.
     */
    static void trace(RocketqDriver.Opts o) throws Exception {
        String topic = o.topic();
        int n = o.count();
        DefaultMQProducer p = Clients.producer(o, o.group() + "-producer", true);
        for (int i = 0; i < n; i++) {
            Message m = Clients.message(topic, "TagTr", "traced-" + i, "traced " + i);
            Out.emit(Out.sent("trace", m, p.send(m)));
        }
        boolean consumed = Scenarios.consumeAll(o, topic, o.group(), n, true);
        String traceTopic = o.get("trace-topic", "RMQ_SYS_TRACE_TOPIC");
        DefaultLitePullConsumer c = Clients.litePull(o, o.group() + "-trace-reader", "trace-reader");
        c.start();
        Collection<MessageQueue> mqs = Clients.queues(o, c, traceTopic);
        c.assign(mqs);
        for (MessageQueue mq : mqs) {
            c.seekToBegin(mq);
        }
        Out.Collector got = new Out.Collector();
        while (got.unique() < 3 * n && o.remainingMs() > 0) {
            for (MessageExt m : c.poll(Math.min(500, Math.max(1, o.remainingMs())))) {
                for (TraceContext ctx : TraceDataEncoder.decoderFromTraceDataString(Out.body(m))) {
                    for (TraceBean bean : ctx.getTraceBeans()) {
                        JSONObject line = Out.event("trace");
                        line.put("type", ctx.getTraceType().name());
                        line.put("group", ctx.getGroupName());
                        line.put("success", ctx.isSuccess());
                        line.put("traceTopicQueueId", m.getQueueId());
                        line.put("traceKeys", m.getKeys());
                        line.put("topic", bean.getTopic());
                        line.put("msgId", bean.getMsgId());
                        line.put("keys", bean.getKeys());
                        line.put("tags", bean.getTags());
                        Out.emit(line);
                        if (bean.getKeys() != null && bean.getKeys().startsWith("traced-")) {
                            got.add(ctx.getTraceType().name() + "/" + bean.getMsgId());
                        }
                    }
                }
            }
        }
        Out.emit(Out.done("trace", consumed && got.unique() >= 3 * n));
    }

    /** 9. --count requests answered by a responder (a push consumer that replies with its own producer). */
    static void request(RocketqDriver.Opts o) throws Exception {
        final String topic = o.topic();
        int n = o.count();
        // The replier creates the topic, so the requester's first request finds no route: request() then
        // fetches it and heartbeats, which is how the broker learns where to push replies for this client.
        final DefaultMQProducer replier = Clients.producer(o, o.group() + "-replier", false);
        Message warmUp = Clients.message(topic, "TagW", "warm-up", "warm-up");
        Out.emit(Out.sent("warm-up", warmUp, replier.send(warmUp)));
        DefaultMQProducer requester = Clients.producer(o, o.group() + "-requester", false);
        DefaultMQPushConsumer responder = Clients.pushConsumer(o, o.group() + "-responder", "responder", false);
        responder.subscribe(topic, "*");
        responder.registerMessageListener(new MessageListenerConcurrently() {
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
                for (MessageExt m : msgs) {
                    Out.emit(Out.received("received", "responder", m));
                    if (MessageUtil.getReplyToClient(m) == null) {
                        continue;  // the warm-up message asks for no reply
                    }
                    try {
                        byte[] body = ("reply to " + Out.body(m)).getBytes(StandardCharsets.UTF_8);
                        Message reply = MessageUtil.createReplyMessage(m, body);
                        Out.emit(Out.sent("reply", reply, replier.send(reply)));
                    } catch (Exception e) {
                        JSONObject err = Out.event("reply-error");
                        err.put("keys", m.getKeys());
                        err.put("error", String.valueOf(e));
                        Out.emit(err);
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        responder.start();
        int answered = 0;
        for (int i = 0; i < n && o.remainingMs() > 0; i++) {
            Message m = Clients.message(topic, "TagQ", "request-" + i, "request " + i);
            try {
                Message reply = requester.request(m, Math.min(15_000, Math.max(1, o.remainingMs())));
                JSONObject line = Out.event("reply");
                line.put("requestKeys", m.getKeys());
                line.put("topic", reply.getTopic());
                line.put("body", Out.body(reply));
                line.put("props", reply.getProperties());
                Out.emit(line);
                answered++;
            } catch (Exception e) {
                JSONObject err = Out.event("request-error");
                err.put("keys", m.getKeys());
                err.put("error", String.valueOf(e));
                Out.emit(err);
            }
        }
        Clients.linger(o);  // the responder's own lines (its send returns after the requester got the reply)
        Out.emit(Out.done("request", answered == n));
    }
}
