// Command gointerop drives Apache RocketMQ's Go client (rocketmq-client-go v2) against a name server
// for rocketq's interop tests. It prints one JSON object per line on stdout and nothing else there.
//
//	gointerop produce      -namesrv ADDR -topic T -group G -n N [-tag TAG] [-body-prefix P] [-props k=v,...]
//	gointerop push-consume -namesrv ADDR -topic T -group G -n N [-tags EXPR] [-timeout SEC] [-retry-once]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// Lines from concurrent consume goroutines must not interleave.
var outMu sync.Mutex

func emit(v interface{}) {
	line, err := json.Marshal(v)
	if err != nil {
		fatal("json: %v", err)
	}
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(line, '\n'))
}

func fatal(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "gointerop: "+format+"\n", args...)
	os.Exit(1)
}

type common struct {
	namesrv, topic, group string
	n                     int
}

func flags(name string, args []string, extra func(*flag.FlagSet)) common {
	var c common
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	fs.StringVar(&c.namesrv, "namesrv", "127.0.0.1:9876", "name server address(es), ';'-separated")
	fs.StringVar(&c.topic, "topic", "", "topic")
	fs.StringVar(&c.group, "group", "", "producer or consumer group")
	fs.IntVar(&c.n, "n", 1, "number of messages")
	extra(fs)
	if err := fs.Parse(args); err != nil || c.topic == "" || c.group == "" {
		fatal("%s needs -topic and -group", name)
	}
	return c
}

func resolver(namesrv string) primitive.NsResolver {
	return primitive.NewPassthroughResolver(strings.Split(namesrv, ";"))
}

func parseProps(spec string) map[string]string {
	props := map[string]string{}
	for _, kv := range strings.Split(spec, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			fatal("bad -props entry %q (want k=v)", kv)
		}
		props[k] = v
	}
	return props
}

var statusNames = map[primitive.SendStatus]string{
	primitive.SendOK:                "SEND_OK",
	primitive.SendFlushDiskTimeout:  "FLUSH_DISK_TIMEOUT",
	primitive.SendFlushSlaveTimeout: "FLUSH_SLAVE_TIMEOUT",
	primitive.SendSlaveNotAvailable: "SLAVE_NOT_AVAILABLE",
	primitive.SendUnknownError:      "UNKNOWN_ERROR",
}

func produce(args []string) {
	var tag, bodyPrefix, propSpec string
	c := flags("produce", args, func(fs *flag.FlagSet) {
		fs.StringVar(&tag, "tag", "TagA", "tag of every message")
		fs.StringVar(&bodyPrefix, "body-prefix", "go-body-", "body is this prefix followed by the index")
		fs.StringVar(&propSpec, "props", "", "extra user properties, k=v,k2=v2")
	})
	props := parseProps(propSpec)
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(resolver(c.namesrv)),
		producer.WithGroupName(c.group),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(10*time.Second),
	)
	if err != nil {
		fatal("new producer: %v", err)
	}
	if err := p.Start(); err != nil {
		fatal("start producer: %v", err)
	}
	defer p.Shutdown()
	for i := 0; i < c.n; i++ {
		msg := primitive.NewMessage(c.topic, []byte(bodyPrefix+strconv.Itoa(i)))
		msg.WithTag(tag)
		msg.WithKeys([]string{fmt.Sprintf("key-%d", i), fmt.Sprintf("alt-%d", i)})
		msg.WithProperty("seq", strconv.Itoa(i))
		for k, v := range props {
			msg.WithProperty(k, v)
		}
		res, err := p.SendSync(context.Background(), msg)
		if err != nil {
			emit(map[string]interface{}{"i": i, "error": err.Error()})
			continue
		}
		emit(map[string]interface{}{
			"i": i, "msgId": res.MsgID, "offsetMsgId": res.OffsetMsgID,
			"topic": res.MessageQueue.Topic, "brokerName": res.MessageQueue.BrokerName,
			"queueId": res.MessageQueue.QueueId, "queueOffset": res.QueueOffset,
			"status": statusNames[res.Status],
		})
	}
}

// userProps drops the properties the client and broker keep for themselves, and sorts nothing:
// the test compares maps.
func userProps(m *primitive.MessageExt) map[string]string {
	out := map[string]string{}
	for k, v := range m.GetProperties() {
		out[k] = v
	}
	return out
}

func pushConsume(args []string) {
	var tags string
	var timeout int
	var retryOnce bool
	c := flags("push-consume", args, func(fs *flag.FlagSet) {
		fs.StringVar(&tags, "tags", "*", "tag expression")
		fs.IntVar(&timeout, "timeout", 60, "give up after this many seconds")
		fs.BoolVar(&retryOnce, "retry-once", false, "answer RECONSUME_LATER (delay level 1) to each first delivery")
	})
	pc, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(resolver(c.namesrv)),
		consumer.WithGroupName(c.group),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		fatal("new push consumer: %v", err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	deliveries := 0
	enough := make(chan struct{})
	var once sync.Once
	var inflight int64
	handler := func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		atomic.AddInt64(&inflight, 1)
		defer atomic.AddInt64(&inflight, -1)
		result := consumer.ConsumeSuccess
		for _, m := range msgs {
			if retryOnce && m.ReconsumeTimes == 0 {
				result = consumer.ConsumeRetryLater
			}
		}
		if result == consumer.ConsumeRetryLater {
			if cc, ok := primitive.GetConcurrentlyCtx(ctx); ok {
				cc.DelayLevelWhenNextConsume = 1
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			deliveries++
			emit(map[string]interface{}{
				"msgId": m.MsgId, "offsetMsgId": m.OffsetMsgId, "topic": m.Topic,
				"tags": m.GetTags(), "keys": m.GetKeys(), "body": string(m.Body),
				"properties": userProps(m), "queueId": m.Queue.QueueId, "queueOffset": m.QueueOffset,
				"reconsumeTimes": m.ReconsumeTimes, "bornHost": m.BornHost, "storeHost": m.StoreHost,
				"acked": result == consumer.ConsumeSuccess,
			})
			if result == consumer.ConsumeSuccess {
				seen[m.MsgId] = true
			}
		}
		if len(seen) >= c.n {
			once.Do(func() { close(enough) })
		}
		return result, nil
	}
	selector := consumer.MessageSelector{Type: consumer.TAG, Expression: tags}
	if err := pc.Subscribe(c.topic, selector, handler); err != nil {
		fatal("subscribe: %v", err)
	}
	if err := pc.Start(); err != nil {
		fatal("start push consumer: %v", err)
	}
	timedOut := false
	select {
	case <-enough:
	case <-time.After(time.Duration(timeout) * time.Second):
		timedOut = true
	}
	// The client records a message's offset just after the handler returns, and not at all once Shutdown has
	// dropped the queue: let the last handlers finish and the client note their offsets first.
	for i := 0; i < 500 && atomic.LoadInt64(&inflight) > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	// Shutdown sends the consumed offsets to the broker before it returns.
	if err := pc.Shutdown(); err != nil {
		fatal("shutdown: %v", err)
	}
	mu.Lock()
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	emit(map[string]interface{}{"done": true, "unique": len(seen), "deliveries": deliveries,
		"timedOut": timedOut, "msgIds": ids})
	mu.Unlock()
	if timedOut {
		os.Exit(3)
	}
}

func main() {
	if lvl := os.Getenv("ROCKETMQ_GO_LOG_LEVEL"); lvl == "" {
		rlog.SetLogLevel("error")
	}
	if len(os.Args) < 2 {
		fatal("usage: gointerop produce|push-consume [flags]")
	}
	switch os.Args[1] {
	case "produce":
		produce(os.Args[2:])
	case "push-consume":
		pushConsume(os.Args[2:])
	default:
		fatal("unknown mode %q", os.Args[1])
	}
}
