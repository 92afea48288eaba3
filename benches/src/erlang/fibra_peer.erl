%% The Erlang/OTP side of fibra-compare's process benches: each function runs one round and
%% prints its value (nanoseconds per operation, or bytes per process) on a line of its own.
-module(fibra_peer).
-behaviour(gen_server).
-export([main/1]).
%% The gen_server of call_roundtrip: answers every call with the term it was given.
-export([init/1, handle_call/3, handle_cast/2]).

main([Bench | Args]) ->
    Value = run(Bench, [list_to_integer(A) || A <- Args]),
    io:format("~.3f~n", [float(Value)]),
    halt().

now_ns() -> erlang:monotonic_time(nanosecond).

%% N processes spawned until every one has started and waits in receive: ns per process.
run("proc_spawn", [N]) ->
    Me = self(),
    T0 = now_ns(),
    Pids = [spawn(fun() -> parked(Me) end) || _ <- lists:seq(1, N)],
    await_ready(N),
    T1 = now_ns(),
    [exit(P, kill) || P <- Pids],
    (T1 - T0) / N;
%% The resident memory N parked processes add: bytes per process.
run("proc_memory", [N]) ->
    Me = self(),
    Before = resident_bytes(),
    Pids = [spawn(fun() -> parked(Me) end) || _ <- lists:seq(1, N)],
    await_ready(N),
    After = resident_bytes(),
    [exit(P, kill) || P <- Pids],
    (After - Before) / N;
%% A token around a ring of Ring processes (this one included), Laps times: ns per hop.
run("proc_ring", [Ring, Laps]) ->
    Me = self(),
    First = lists:foldl(fun(_, Next) -> spawn(fun() -> forward(Next) end) end, Me,
                        lists:seq(1, Ring - 1)),
    T0 = now_ns(),
    Hops = lap(First, Laps, 0),
    T1 = now_ns(),
    Hops = Laps * (Ring - 1),
    (T1 - T0) / (Laps * Ring);
%% Round trips between this process and an echoing one: ns per round trip.
run("proc_pingpong", [Trips]) ->
    Echo = spawn(fun echo/0),
    T0 = now_ns(),
    ping(Echo, Trips),
    T1 = now_ns(),
    exit(Echo, kill),
    (T1 - T0) / Trips;
%% With N messages queued, receive the newest (skipping N - 1), Rounds times: ns per skipped
%% message.
run("selective_receive", [N, Rounds]) ->
    Spent = selective(N, Rounds, 0),
    Spent / (Rounds * (N - 1));
%% A chain of N processes, each started by the one before with spawn_link, ended by one
%% exit(First, kill): ns per process ended, until the last's 'DOWN'.
run("link_chain_kill", [N]) ->
    Me = self(),
    First = spawn(fun() -> chain(N - 1, Me) end),
    Last = receive {last, L} -> L end,
    Ref = monitor(process, Last),
    T0 = now_ns(),
    exit(First, kill),
    receive {'DOWN', Ref, process, Last, killed} -> ok end,
    T1 = now_ns(),
    (T1 - T0) / N;
%% Calls to a gen_server answering each with its request: ns per call.
run("call_roundtrip", [Calls]) ->
    {ok, Server} = gen_server:start(?MODULE, [], []),
    T0 = now_ns(),
    calls(Server, Calls),
    T1 = now_ns(),
    gen_server:stop(Server),
    (T1 - T0) / Calls.

init([]) -> {ok, none}.
handle_call(Request, _From, State) -> {reply, Request, State}.
handle_cast(_, State) -> {noreply, State}.

calls(_, 0) -> ok;
calls(Server, I) ->
    I = gen_server:call(Server, I),
    calls(Server, I - 1).

chain(0, Main) ->
    Main ! {last, self()},
    receive after infinity -> ok end;
chain(After, Main) ->
    spawn_link(fun() -> chain(After - 1, Main) end),
    receive after infinity -> ok end.

parked(Parent) ->
    Parent ! ready,
    receive stop -> ok end.

await_ready(0) -> ok;
await_ready(N) -> receive ready -> await_ready(N - 1) end.

forward(Next) ->
    receive Hops -> Next ! Hops + 1, forward(Next) end.

lap(_, 0, Hops) -> Hops;
lap(First, Laps, Hops) ->
    First ! Hops,
    receive Back -> lap(First, Laps - 1, Back) end.

echo() ->
    receive {From, X} -> From ! X, echo() end.

ping(_, 0) -> ok;
ping(Echo, I) ->
    Echo ! {self(), I},
    receive I -> ping(Echo, I - 1) end.

selective(_, 0, Spent) -> Spent;
selective(N, Rounds, Spent) ->
    [self() ! I || I <- lists:seq(1, N)],
    T0 = now_ns(),
    receive N -> ok end,
    T1 = now_ns(),
    drain(N - 1),
    selective(N, Rounds - 1, Spent + (T1 - T0)).

drain(0) -> ok;
drain(K) -> receive _ -> drain(K - 1) end.

resident_bytes() ->
    {ok, Status} = file:read_file("/proc/self/status"),
    [Line] = [L || L <- binary:split(Status, <<"\n">>, [global]),
                   binary:part(L, 0, min(6, byte_size(L))) =:= <<"VmRSS:">>],
    [_, Kb | _] = binary:split(Line, [<<" ">>, <<"\t">>], [global, trim_all]),
    binary_to_integer(Kb) * 1024.
