import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/** Client construction and the few loops every scenario shares. */
final class Clients {
    private Clients() {
    }

    /** AclClientRPCHook with --access-key/--secret-key (and --security-token), or null without --access-key. */
    static RPCHook aclHook(RocketqDriver.Opts o) {
        return aclHook(o.values.get("access-key"), o.values.get("secret-key"), o.values.get("security-token"));
    }

    static RPCHook aclHook(String accessKey, String secretKey, String token) {
        if (accessKey == null) {
            return null;
        }
        SessionCredentials c = token == null ? new SessionCredentials(accessKey, secretKey)
            : new SessionCredentials(accessKey, secretKey, token);
        return new AclClientRPCHook(c);
    }

    static DefaultMQProducer producer(RocketqDriver.Opts o, String group, boolean trace) throws MQClientException {
        DefaultMQProducer p = new DefaultMQProducer(group, aclHook(o), trace, null);
        return start(o, p, group);
    }

    static <P extends DefaultMQProducer> P start(RocketqDriver.Opts o, P p, String instance) throws MQClientException {
        p.setNamesrvAddr(o.namesrv());
        p.setInstanceName(instance);
        p.setSendMsgTimeout(10_000);
        p.start();
        return p;
    }

    /** A push consumer, not yet started, reading a new group's backlog from the first offset. */
    static DefaultMQPushConsumer pushConsumer(RocketqDriver.Opts o, String group, String instance, boolean trace) {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, aclHook(o),
            new AllocateMessageQueueAveragely(), trace, null);
        c.setNamesrvAddr(o.namesrv());
        c.setInstanceName(instance);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        return c;
    }

    static DefaultLitePullConsumer litePull(RocketqDriver.Opts o, String group, String instance) {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group, aclHook(o));
        c.setNamesrvAddr(o.namesrv());
        c.setInstanceName(instance);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollTimeoutMillis(500);
        return c;
    }

    static Message message(String topic, String tags, String keys, String body, String... props) {
        Message m = new Message(topic, tags, keys, body.getBytes(StandardCharsets.UTF_8));
        for (int i = 0; i + 1 < props.length; i += 2) {
            m.putUserProperty(props[i], props[i + 1]);
        }
        return m;
    }

    /** The topic's queues once the name server has a route for it (a broker may still be registering it). */
    static Collection<MessageQueue> queues(RocketqDriver.Opts o, DefaultLitePullConsumer c, String topic)
        throws InterruptedException, MQClientException {
        MQClientException last = null;
        while (o.remainingMs() > 0) {
            try {
                Collection<MessageQueue> mqs = c.fetchMessageQueues(topic);
                if (!mqs.isEmpty()) {
                    return mqs;
                }
            } catch (MQClientException e) {
                last = e;
            }
            Thread.sleep(200);
        }
        throw last != null ? last : new MQClientException(-1, "no queues for " + topic);
    }

    /** Polls until ``want`` distinct keys were seen (or the time is up), then ``lingerMs`` longer. */
    static List<MessageExt> pollUntil(RocketqDriver.Opts o, DefaultLitePullConsumer c, String name, Out.Collector got,
                                      int want, long lingerMs, Keyer keyer) throws InterruptedException {
        List<MessageExt> all = new ArrayList<MessageExt>();
        while (got.unique() < want && o.remainingMs() > 0) {
            for (MessageExt m : c.poll(Math.min(500, Math.max(1, o.remainingMs())))) {
                all.add(m);
                Out.emit(Out.received("received", name, m));
                got.add(keyer.key(m));
            }
        }
        long until = System.currentTimeMillis() + Math.min(lingerMs, o.remainingMs());
        while (System.currentTimeMillis() < until) {
            for (MessageExt m : c.poll(Math.max(1, until - System.currentTimeMillis()))) {
                all.add(m);
                Out.emit(Out.received("received", name, m));
                got.add(keyer.key(m));
            }
        }
        return all;
    }

    static void linger(RocketqDriver.Opts o) throws InterruptedException {
        Thread.sleep(Math.min(o.lingerMs(), o.remainingMs()));
    }

    /** What makes a received message distinct for a wait. */
    interface Keyer {
        String key(MessageExt m);
    }

    static final Keyer BY_KEYS = new Keyer() {
        public String key(MessageExt m) {
            return m.getKeys();
        }
    };
}
