// HeapMan.cs — mark game events for the HeapMan recorder from C# (Mono).
//
//   HeapMan.Event("level_start");           a named event; replay can seek to "level_start#2"
//   HeapMan.Event("spawn", payloadBytes);   a named event with a payload (at most 16 KiB kept)
//   HeapMan.Frame();                        a frame mark (frames are numbered 1, 2, 3, ...)
//
// Copy this file into a game. It calls the recorder's C entry points (heapman.h) in the process
// itself ("__Internal": `heaprec run` preloads the recorder into mono-boehm). Without the
// recorder the first call finds no entry point, and every call after it returns at once: the
// game runs unchanged. Safe from any thread.
using System;
using System.Runtime.InteropServices;

public static class HeapMan
{
    // Mono marshals the name as NUL-terminated UTF-8 in native memory: no managed allocation.
    [DllImport("__Internal", EntryPoint = "heapman_record_event", CharSet = CharSet.Ansi)]
    static extern void RecordEvent(string name, byte[] data, UIntPtr length);

    [DllImport("__Internal", EntryPoint = "heapman_record_frame")]
    static extern void RecordFrame();

    static volatile bool absent;

    public static void Event(string name)
    {
        Event(name, null);
    }

    public static void Event(string name, byte[] payload)
    {
        if (absent) return;
        try
        {
            RecordEvent(name, payload, new UIntPtr(payload == null ? 0u : (uint)payload.Length));
        }
        catch (EntryPointNotFoundException) { absent = true; }
        catch (DllNotFoundException) { absent = true; }
    }

    public static void Frame()
    {
        if (absent) return;
        try
        {
            RecordFrame();
        }
        catch (EntryPointNotFoundException) { absent = true; }
        catch (DllNotFoundException) { absent = true; }
    }
}
