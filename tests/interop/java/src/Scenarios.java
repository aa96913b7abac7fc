import com.alibaba.fastjson.JSONObject;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** The producer and push-consumer scenarios; the others are in MoreScenarios. */
final class Scenarios {
    private Scenarios() {
    }

    static void run(String name, RocketqDriver.Opts o) throws Exception {
        if ("send".equals(name)) {
            send(o);
        } else if ("orderly".equals(name)) {
            orderly(o);
        } else if ("delay".equals(name)) {
            delay(o);
        } else if ("sql".equals(name)) {
            sql(o);
        } else if ("broadcast".equals(name)) {
            broadcast(o);
        } else if ("retry-dlq".equals(name)) {
            retryDlq(o);
        } else {
            MoreScenarios.run(name, o);
        }
    }

    /** A concurrent push consumer that reports every delivery and counts them in ``got``. */
    static DefaultMQPushConsumer collect(RocketqDriver.Opts o, DefaultMQPushConsumer c, final String name,
                                         final Out.Collector got, final Clients.Keyer keyer) throws Exception {
        c.registerMessageListener(new MessageListenerConcurrently() {
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
                for (MessageExt m : msgs) {
                    Out.emit(Out.received("received", name, m));
                    got.add(keyer.key(m));
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        c.start();
        return c;
    }

    static boolean consumeAll(RocketqDriver.Opts o, String topic, String group, int want, boolean trace)
        throws Exception {
        Out.Collector got = new Out.Collector();
        DefaultMQPushConsumer c = Clients.pushConsumer(o, group, group, trace);
        c.subscribe(topic, "*");
        collect(o, c, group, got, Clients.BY_KEYS);
        boolean complete = got.await(want, o);
        Clients.linger(o);
        return complete;
    }

    /** 1. sync, async, oneway and batch sends of --count messages each, then one push consumer reads them all. */
    static void send(RocketqDriver.Opts o) throws Exception {
        String topic = o.topic();
        int n = o.count();
        DefaultMQProducer p = Clients.producer(o, o.group() + "-producer", false);
        SendResult first = null;
        for (int i = 0; i < n; i++) {
            Message m = sample(topic, "sync", i);
            SendResult r = p.send(m);
            first = first == null ? r : first;
            Out.emit(Out.sent("sync", m, r));
        }
        final CountDownLatch acked = new CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            final Message m = sample(topic, "async", i);
            p.send(m, new SendCallback() {
                public void onSuccess(SendResult r) {
                    Out.emit(Out.sent("async", m, r));
                    acked.countDown();
                }

                public void onException(Throwable e) {
                    JSONObject err = Out.event("send-error");
                    err.put("keys", m.getKeys());
                    err.put("error", String.valueOf(e));
                    Out.emit(err);
                    acked.countDown();
                }
            });
        }
        acked.await(o.remainingMs(), TimeUnit.MILLISECONDS);
        for (int i = 0; i < n; i++) {
            Message m = sample(topic, "oneway", i);
            p.sendOneway(m);
            Out.emit(Out.sent("oneway", m, null));
        }
        List<Message> batch = new ArrayList<Message>();
        for (int i = 0; i < n; i++) {
            batch.add(sample(topic, "batch", i));
        }
        SendResult r = p.send(batch);
        for (Message m : batch) {
            Out.emit(Out.sent("batch", m, r));
        }
        boolean complete = consumeAll(o, topic, o.group(), 4 * n, false);
        lookUp(o, p, topic, first);
        Out.emit(Out.done("send", complete));
    }

    /** The first sync message looked up by offset msgId (VIEW_MESSAGE_BY_ID), unique id and key (QUERY_MESSAGE). */
    static void lookUp(RocketqDriver.Opts o, DefaultMQProducer p, String topic, SendResult r) throws Exception {
        Out.emit(Out.received("viewed", "offsetMsgId", p.viewMessage(r.getOffsetMsgId())));
        Out.emit(Out.received("viewed", "uniqKey", p.viewMessage(topic, r.getMsgId())));
        for (MessageExt m : p.queryMessage(topic, "k-sync-0", 32, 0, System.currentTimeMillis() + 60_000)
            .getMessageList()) {
            Out.emit(Out.received("viewed", "key", m));
        }
    }

    static Message sample(String topic, String mode, int i) {
        return Clients.message(topic, "Tag-" + mode, "k-" + mode + "-" + i, "body " + mode + " " + i + " \u00e9\u20ac",
            "mode", mode, "seq", String.valueOf(i), "note", "\u00fc \u00df");
    }

    /** 2. --keys order keys with --count messages each, each key to one queue; an orderly consumer reads them. */
    static void orderly(RocketqDriver.Opts o) throws Exception {
        String topic = o.topic();
        int keys = o.getInt("keys", 4);
        int n = o.count();
        DefaultMQProducer p = Clients.producer(o, o.group() + "-producer", false);
        MessageQueueSelector byKey = new MessageQueueSelector() {
            public MessageQueue select(List<MessageQueue> mqs, Message msg, Object arg) {
                return mqs.get(Math.abs(arg.hashCode() % mqs.size()));
            }
        };
        // Interleave the keys so that order within a key is the only order there is.
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < keys; k++) {
                String key = "order-" + k;
                Message m = Clients.message(topic, "TagO", key + "-" + i, key + ":" + i, "okey", key,
                    "seq", String.valueOf(i));
                Out.emit(Out.sent("orderly", m, p.send(m, byKey, key)));
            }
        }
        final Out.Collector got = new Out.Collector();
        final String name = o.group();
        DefaultMQPushConsumer c = Clients.pushConsumer(o, o.group(), o.group(), false);
        c.subscribe(topic, "*");
        c.registerMessageListener(new MessageListenerOrderly() {
            public ConsumeOrderlyStatus consumeMessage(List<MessageExt> msgs, ConsumeOrderlyContext ctx) {
                for (MessageExt m : msgs) {
                    Out.emit(Out.received("received", name, m));
                    got.add(m.getKeys());
                }
                return ConsumeOrderlyStatus.SUCCESS;
            }
        });
        c.start();
        boolean complete = got.await(keys * n, o);
        Clients.linger(o);
        Out.emit(Out.done("orderly", complete));
    }

    /** 3. --count messages with delay level --level; the consumer's lines carry receivedAt and bornTimestamp. */
    static void delay(RocketqDriver.Opts o) throws Exception {
        String topic = o.topic();
        int level = o.getInt("level", 2);
        DefaultMQProducer p = Clients.producer(o, o.group() + "-producer", false);
        for (int i = 0; i < o.count(); i++) {
            Message m = Clients.message(topic, "TagD", "delay-" + i, "delayed " + i);
            m.setDelayTimeLevel(level);
            JSONObject line = Out.sent("delay", m, p.send(m));
            line.put("level", level);
            Out.emit(line);
        }
        boolean complete = consumeAll(o, topic, o.group(), o.count(), false);
        Out.emit(Out.done("delay", complete));
    }

    /** 7. --count messages with properties a=i and color=red|blue; a consumer subscribed with --sql. */
    static void sql(RocketqDriver.Opts o) throws Exception {
        String topic = o.topic();
        DefaultMQProducer p = Clients.producer(o, o.group() + "-producer", false);
        for (int i = 0; i < o.count(); i++) {
            Message m = Clients.message(topic, i % 3 == 0 ? "TagX" : "TagY", "sql-" + i, "sql " + i,
                "a", String.valueOf(i), "color", i % 2 == 0 ? "red" : "blue");
            Out.emit(Out.sent("sql", m, p.send(m)));
        }
        Out.Collector got = new Out.Collector();
        DefaultMQPushConsumer c = Clients.pushConsumer(o, o.group(), o.group(), false);
        c.subscribe(topic, MessageSelector.bySql(o.get("sql", "a > 4 AND color = 'red'")));
        collect(o, c, o.group(), got, Clients.BY_KEYS);
        boolean complete = got.await(o.getInt("expect", 1), o);
        Clients.linger(o);
        Out.emit(Out.done("sql", complete));
    }

    /** 5. two BROADCASTING consumers of one group each receive every one of --count messages. */
    static void broadcast(RocketqDriver.Opts o) throws Exception {
        String topic = o.topic();
        DefaultMQProducer p = Clients.producer(o, o.group() + "-producer", false);
        for (int i = 0; i < o.count(); i++) {
            Message m = Clients.message(topic, "TagB", "bc-" + i, "broadcast " + i);
            Out.emit(Out.sent("broadcast", m, p.send(m)));
        }
        Out.Collector got = new Out.Collector();
        for (final String name : new String[] {"consumer-1", "consumer-2"}) {
            DefaultMQPushConsumer c = Clients.pushConsumer(o, o.group(), name, false);
            c.setMessageModel(MessageModel.BROADCASTING);
            c.subscribe(topic, "*");
            collect(o, c, name, got, new Clients.Keyer() {
                public String key(MessageExt m) {
                    return name + "/" + m.getKeys();
                }
            });
        }
        boolean complete = got.await(2 * o.count(), o);
        Clients.linger(o);
        Out.emit(Out.done("broadcast", complete));
    }

    /**
     * 5. a listener that always answers RECONSUME_LATER with --max-reconsume retries: every message is
     * delivered max+1 times, then it is read back from %DLQ%group with a lite pull consumer.
     */
    static void retryDlq(RocketqDriver.Opts o) throws Exception {
        String topic = o.topic();
        int n = o.count();
        int max = o.getInt("max-reconsume", 2);
        DefaultMQProducer p = Clients.producer(o, o.group() + "-producer", false);
        for (int i = 0; i < n; i++) {
            Message m = Clients.message(topic, "TagR", "retry-" + i, "retry " + i, "seq", String.valueOf(i));
            Out.emit(Out.sent("retry", m, p.send(m)));
        }
        final Out.Collector got = new Out.Collector();
        final String name = o.group();
        DefaultMQPushConsumer c = Clients.pushConsumer(o, o.group(), o.group(), false);
        c.setMaxReconsumeTimes(max);
        c.subscribe(topic, "*");
        c.registerMessageListener(new MessageListenerConcurrently() {
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
                for (MessageExt m : msgs) {
                    Out.emit(Out.received("received", name, m));
                    got.add(m.getKeys() + "#" + m.getReconsumeTimes());
                }
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
        });
        c.start();
        boolean delivered = got.await(n * (max + 1), o);
        boolean inDlq = MoreScenarios.readTopic(o, "%DLQ%" + o.group(), o.group() + "-dlq-reader", "dlq", n);
        Out.emit(Out.done("retry-dlq", delivered && inDlq));
    }
}
