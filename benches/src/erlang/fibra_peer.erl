%% The Erlang/OTP side of fibra-compare's process benches: each function runs one round and
%% prints its value (nanoseconds per operation, or bytes per process) on a line of its own.
-module(fibra_peer).
-export([main/1]).

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
    Spent / (Rounds * (N - 1)).

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
